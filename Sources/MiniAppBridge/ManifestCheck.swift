import Foundation
import MiniAppCore
internal import CDispatch

/// One thing wrong with a mini-app's manifest.json that the SDKs do not report: a shape the schema
/// (`Manifests/schema/manifest.schema.json`) refuses, a permission name no SDK knows, a duplicate, an
/// access token the bridge can never hand out, a required permission no script asks for.
public struct ManifestProblem: Sendable, Equatable, CustomStringConvertible {
    /// What kind of problem it is.
    public enum Kind: String, Sendable, CaseIterable {
        /// The folder lacks `manifest.json` or `index.html`.
        case missingFile
        /// A shape the schema refuses: the manifest cannot be used at all.
        case schema
        /// A top-level key the manifest does not have, close to one it has (`reqPermission`).
        case misspeltKey
        /// A permission name the SDKs do not know.
        case unknownPermission
        /// A permission, audience or scope named twice.
        case duplicate
        /// An access-token declaration the bridge cannot answer (no scope, no `ACCESS_TOKEN`).
        case accessToken
        /// A required permission whose actions no script of the folder names.
        case unusedRequirement
    }

    /// What kind of problem it is.
    public var kind: Kind
    /// One line saying what is wrong and what to do.
    public var message: String

    /// A problem of `kind` saying `message`.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}

/// The static checks of `miniapp dev --check`: a manifest against the schema and against the names the
/// SDKs and this bridge know, and a development folder's scripts against its required permissions.
public enum ManifestCheck {
    /// The top-level keys of a manifest.
    static let keys = ["reqPermissions", "optPermissions", "accessTokenPermissions", "customMetaData"]

    /// The problems of the manifest text `bytes`, in the order of the document.
    public static func problems<Bytes: Collection<UInt8>>(inManifest bytes: Bytes) -> [ManifestProblem] {
        guard let document = JSONReader.value(bytes, maxDepth: 32) else {
            return [ManifestProblem(.schema, "manifest.json is not JSON (one value, no trailing commas)")]
        }
        guard case .object(let fields) = document else {
            return [ManifestProblem(.schema, "manifest.json is not a JSON object")]
        }
        var problems: [ManifestProblem] = []
        for key in fields.keys.sorted() where !keys.contains(key) {
            if let near = closest(to: key, among: keys, within: 3) {
                problems.append(ManifestProblem(.misspeltKey, "'\(shown(key))' is not a manifest key: did you mean \(near)?"))
            }
        }
        let required = permissions(fields["reqPermissions"], key: "reqPermissions", into: &problems)
        let optional = permissions(fields["optPermissions"], key: "optPermissions", into: &problems)
        let tokens = accessTokens(fields["accessTokenPermissions"], into: &problems)
        if let metadata = fields["customMetaData"] {
            if case .object(let pairs) = metadata {
                for key in pairs.keys.sorted() where !isString(pairs[key]) {
                    problems.append(ManifestProblem(.schema, "customMetaData.\(shown(key)) is not a string"))
                }
            } else {
                problems.append(ManifestProblem(.schema, "customMetaData is not an object of strings"))
            }
        }
        for (name, _) in required where optional.contains(where: { $0.0 == name }) {
            problems.append(ManifestProblem(.duplicate, "\(shown(name)) is in both reqPermissions and optPermissions: keep it in one"))
        }
        let declared = Set((required + optional).map { PermissionName.full($0.0) })
        if !tokens.isEmpty, !declared.contains(KnownPermission.accessToken.rawValue) {
            problems.append(ManifestProblem(.accessToken, "accessTokenPermissions lists audiences, but neither reqPermissions nor optPermissions declares \(KnownPermission.accessToken.rawValue): every getAccessToken is refused"))
        }
        if tokens.isEmpty, declared.contains(KnownPermission.accessToken.rawValue), fields["accessTokenPermissions"].map(isArray) ?? true {
            problems.append(ManifestProblem(.accessToken, "\(KnownPermission.accessToken.rawValue) is declared, but accessTokenPermissions lists no audience: every getAccessToken is refused"))
        }
        return problems
    }

    /// The problems of the development folder `folder`: its manifest.json's, a missing manifest.json or
    /// index.html, and each required permission whose actions no script of the folder names (blocking:
    /// reads the folder; run it off the cooperative pool).
    ///
    /// The last check looks for the bridge's method names (`getUserName`, `getContacts`, ...) in the
    /// folder's `.js`, `.mjs`, `.cjs` and `.html` files: an app that bundles Rakuten's JS SDK names every
    /// method in the SDK's own code, so for such an app the check finds nothing.
    public static func problems(ofFolder folder: String) -> [ManifestProblem] {
        var problems: [ManifestProblem] = []
        var info = stat()
        if lstat(folder + "/index.html", &info) != 0 || (info.st_mode & S_IFMT) != S_IFREG {
            problems.append(ManifestProblem(.missingFile, "the folder holds no index.html (a regular file at its top): the app has no start page"))
        }
        let read = FileReading.read(folder + "/manifest.json", followingLinks: false)
        if case .missing = read {
            problems.append(ManifestProblem(.missingFile, "the folder holds no manifest.json: the app declares no permission"))
            return problems
        }
        let bytes: [UInt8]
        do {
            bytes = try read.bytes()
        } catch {
            problems.append(ManifestProblem(.missingFile, "manifest.json: \(error)"))
            return problems
        }
        problems += Self.problems(inManifest: bytes)
        guard let manifest = try? BundleManifest.decode(bytes, source: "manifest.json") else { return problems }
        let wanted = manifest.reqPermissions.compactMap { KnownPermission(rawValue: PermissionName.full($0.name)) }
        guard !wanted.isEmpty else { return problems }
        let scripts = ScriptText(folder: folder)
        for permission in wanted {
            let methods = BridgeDispatcher.methodNames(gatedBy: permission)
            if !methods.isEmpty, !methods.contains(where: scripts.contains) {
                problems.append(ManifestProblem(.unusedRequirement, "reqPermissions requires \(permission.rawValue), but no script of the folder calls \(methods.joined(separator: " or ")): make it optional (optPermissions) or drop it"))
            }
        }
        return problems
    }

    /// The permission declarations of `value` (the list under `key`), as (name, index) pairs, with the
    /// problems of their shapes, names and repeats.
    private static func permissions(_ value: JSONValue?, key: String, into problems: inout [ManifestProblem]) -> [(String, Int)] {
        guard let value else { return [] }
        guard case .array(let items) = value else {
            problems.append(ManifestProblem(.schema, "\(key) is not an array"))
            return []
        }
        var names: [(String, Int)] = []
        for (index, item) in items.enumerated() {
            let place = "\(key)[\(index)]"
            guard case .object(let fields) = item else {
                problems.append(ManifestProblem(.schema, "\(place) is not an object with a name"))
                continue
            }
            if let reason = fields["reason"], !isString(reason) { problems.append(ManifestProblem(.schema, "\(place).reason is not a string")) }
            guard let name = fields["name"] else {
                problems.append(ManifestProblem(.schema, "\(place) has no name"))
                continue
            }
            guard case .string(let text) = name, !text.isEmpty else {
                problems.append(ManifestProblem(.schema, "\(place).name is not a non-empty string"))
                continue
            }
            if let problem = unknownName(text, at: place) { problems.append(problem) }
            if names.contains(where: { PermissionName.full($0.0) == PermissionName.full(text) }) {
                problems.append(ManifestProblem(.duplicate, "\(place): \(key) names \(shown(text)) twice"))
            } else {
                names.append((text, index))
            }
        }
        return names
    }

    /// What is wrong with the permission name `name`, if anything: a short name, a name in the wrong
    /// case, or a name no SDK knows (with the closest known one).
    static func unknownName(_ name: String, at place: String) -> ManifestProblem? {
        if KnownPermission(rawValue: name) != nil { return nil }
        if let known = KnownPermission(name: name) {
            return ManifestProblem(.unknownPermission, "\(place): '\(shown(name))' is a short name: the SDKs read the full name \(known.rawValue)")
        }
        let known = KnownPermission.allCases.map(\.rawValue)
        // The same name in another case, a typo in the full name, or the right short name under another prefix.
        let last = Array((name.split(separator: ".").last.map(String.init) ?? name).uppercased().utf8)
        let near = known.first { $0.lowercased() == name.lowercased() } ?? closest(to: name, among: known, within: 4)
            ?? KnownPermission.allCases.first { editDistance(Array($0.shortName.utf8), last) <= 2 }?.rawValue
        if let near {
            return ManifestProblem(.unknownPermission, "\(place): '\(shown(name))' is not a permission the SDKs know: did you mean \(near)?")
        }
        return ManifestProblem(.unknownPermission, "\(place): '\(shown(name))' is not a permission the SDKs know (\(KnownPermission.allCases.map(\.shortName).joined(separator: ", "))): the bridge never grants it")
    }

    /// The audiences of `value` (accessTokenPermissions), with the problems of their shapes and repeats.
    private static func accessTokens(_ value: JSONValue?, into problems: inout [ManifestProblem]) -> [String] {
        guard let value else { return [] }
        guard case .array(let items) = value else {
            problems.append(ManifestProblem(.schema, "accessTokenPermissions is not an array"))
            return []
        }
        var audiences: [String] = []
        for (index, item) in items.enumerated() {
            let place = "accessTokenPermissions[\(index)]"
            guard case .object(let fields) = item else {
                problems.append(ManifestProblem(.schema, "\(place) is not an object with an audience and scopes"))
                continue
            }
            guard case .string(let audience)? = fields["audience"] else {
                problems.append(ManifestProblem(.schema, "\(place).audience is missing or not a string"))
                continue
            }
            guard case .array(let list)? = fields["scopes"] else {
                problems.append(ManifestProblem(.schema, "\(place).scopes is missing or not an array of strings"))
                continue
            }
            var scopes: [String] = []
            for scope in list {
                guard case .string(let text) = scope else {
                    problems.append(ManifestProblem(.schema, "\(place).scopes holds something other than a string"))
                    continue
                }
                if scopes.contains(text) {
                    problems.append(ManifestProblem(.duplicate, "\(place): the audience '\(shown(audience))' names the scope '\(shown(text))' twice"))
                }
                scopes.append(text)
            }
            if audience.isEmpty {
                problems.append(ManifestProblem(.accessToken, "\(place).audience is empty: name the audience the token is for"))
            }
            if list.isEmpty {
                problems.append(ManifestProblem(.accessToken, "\(place): the audience '\(shown(audience))' has no scope: getAccessToken can ask it for nothing; list its scopes"))
            }
            if audiences.contains(audience) {
                problems.append(ManifestProblem(.duplicate, "\(place): accessTokenPermissions names the audience '\(shown(audience))' twice: list its scopes once"))
            }
            audiences.append(audience)
        }
        return audiences
    }

    private static func isString(_ value: JSONValue?) -> Bool {
        if case .string? = value { return true }
        return false
    }

    private static func isArray(_ value: JSONValue) -> Bool {
        if case .array = value { return true }
        return false
    }

    private static func shown(_ text: String) -> String { Sanitizer.printable(text, limit: 120) }

    /// The candidate closest to `text` by edit distance, when at most `limit` edits away (and not equal).
    static func closest(to text: String, among candidates: [String], within limit: Int) -> String? {
        let scored = candidates.map { ($0, editDistance(Array(text.utf8), Array($0.utf8))) }.filter { $0.1 > 0 && $0.1 <= limit }
        return scored.min { $0.1 < $1.1 }?.0
    }

    /// The Levenshtein distance between `a` and `b`.
    static func editDistance(_ a: [UInt8], _ b: [UInt8]) -> Int {
        if a.isEmpty { return b.count }
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var current = [i + 1] + Array(repeating: 0, count: b.count)
            for (j, y) in b.enumerated() {
                current[j + 1] = min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}

/// The text of a development folder's scripts and pages (`.js`, `.mjs`, `.cjs`, `.html`, `.htm`), read
/// without following links and skipping dot files, up to 64 MiB in all.
struct ScriptText {
    private var files: [Data] = []
    private static let budget = 64 << 20
    private static let extensions: Set<String> = ["js", "mjs", "cjs", "html", "htm"]

    init(folder: String) {
        var left = Self.budget
        var pending = [folder]
        while let directory = pending.popLast(), left > 0 {
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { continue }
            for name in names.sorted() where !name.hasPrefix(".") {
                let path = directory + "/" + name
                var info = stat()
                guard lstat(path, &info) == 0 else { continue }
                switch info.st_mode & S_IFMT {
                case S_IFDIR:
                    pending.append(path)
                case S_IFREG where Self.extensions.contains((name as NSString).pathExtension.lowercased()) && Int(info.st_size) <= left:
                    if case .contents(let bytes) = FileReading.read(path, followingLinks: false) {
                        left -= bytes.count
                        files.append(Data(bytes))
                    }
                default:
                    continue
                }
            }
        }
    }

    /// Whether any file holds `text`.
    func contains(_ text: String) -> Bool {
        let needle = Data(text.utf8)
        return files.contains { $0.range(of: needle) != nil }
    }
}
