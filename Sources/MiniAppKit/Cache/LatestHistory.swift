package import Foundation
public import MiniAppCore

/// A platform answering as its latest a version older than one it answered before, or older than one
/// installed from it: what a compromised platform, a stale mirror or anyone on the path can do to roll
/// a client back to a version with a known flaw. The platform's signature cannot tell: it proves who
/// made a zip, not that the zip is current.
public struct Rollback: Sendable, Equatable, CustomStringConvertible {
    /// The app.
    public var appId: String
    /// What the platform answers as the latest now.
    public var offered: AppVersion
    /// The newer version the cache knows of: the latest the platform answered before, or a version
    /// installed from it whose tag is a higher semantic version.
    public var newer: AppVersion

    /// A rollback of `appId` to `offered` from `newer`.
    public init(appId: String, offered: AppVersion, newer: AppVersion) {
        self.appId = appId
        self.offered = offered
        self.newer = newer
    }

    public var description: String {
        "the platform answers \(Self.describe(offered)) as the latest version of app \(appId), older than \(Self.describe(newer)) known before: a rollback"
    }

    /// A version as a user reads it: its tag and id, or its id.
    public static func describe(_ version: AppVersion) -> String {
        version.versionTag.map { "\($0) (\(version.versionId))" } ?? version.versionId
    }
}

/// What the cache remembers of the versions one platform answered as an app's latest: the latest it
/// accepted, each version it saw replaced as the latest, and the older versions a user allowed as the
/// latest anyway (`--allow-downgrade`), and the highest semantic version installed from it. Kept per
/// namespace and app in `history/<namespace>/<app-id>.json`, written whole or not at all once the
/// version it names is in place (a failed command changes nothing); synced when a latest is replaced,
/// the change a power cut must not take back.
package struct LatestHistory: Sendable, Equatable {
    /// A version the platform answered as the latest, and when.
    package struct Seen: Sendable, Equatable {
        package var version: AppVersion
        package var at: Date
    }

    package var latest: Seen?
    package var replaced: [Seen] = []
    package var allowed: [Seen] = []
    /// The highest semantic version installed from the platform, by id or as the latest.
    package var installed: Seen?

    /// The versions kept in each list: a client that follows an app for years keeps its newest ones.
    static let capacity = 1000

    package init() {}

    /// The rollback that `offered` is, when it is one: a version seen replaced as the latest, or one whose
    /// tag is a lower semantic version than the accepted latest's or than one of `installed` (versions
    /// installed from this platform), when both tags are semantic versions. A version the user allowed
    /// (``allow(_:at:)``) is none.
    /// `installed` is asked for only when the answer depends on it: a warm download of the latest it
    /// already took reads no install record.
    package func rollback(appId: String, offered: AppVersion, installed cached: @autoclosure () -> [AppVersion]) -> Rollback? {
        if allowed.contains(where: { $0.version.versionId == offered.versionId }) { return nil }
        let offeredTag = offered.versionTag.flatMap(SemanticVersion.init)
        if latest?.version.versionId == offered.versionId {
            // The latest already taken: only a higher version installed since makes it a rollback.
            guard let offeredTag, let installed, installed.version.versionId != offered.versionId,
                  let tag = installed.version.versionTag.flatMap(SemanticVersion.init), offeredTag < tag else { return nil }
            return Rollback(appId: appId, offered: offered, newer: installed.version)
        }
        if let latest, replaced.contains(where: { $0.version.versionId == offered.versionId }) {
            return Rollback(appId: appId, offered: offered, newer: latest.version)
        }
        guard let offeredTag else { return nil }
        let higher = ([latest?.version, installed?.version].compactMap { $0 } + cached()).compactMap { version -> (SemanticVersion, AppVersion)? in
            guard version.versionId != offered.versionId, let tag = version.versionTag.flatMap(SemanticVersion.init), offeredTag < tag else { return nil }
            return (tag, version)
        }
        guard let newest = higher.max(by: { $0.0 < $1.0 }) else { return nil }
        return Rollback(appId: appId, offered: offered, newer: newest.1)
    }

    /// Takes `offered` as the latest: the one before is remembered as replaced. `false` when nothing changed.
    @discardableResult
    package mutating func accept(_ offered: AppVersion, at date: Date) -> Bool {
        guard latest?.version != offered else { return false }
        if let latest, latest.version.versionId != offered.versionId, !replaced.contains(where: { $0.version.versionId == latest.version.versionId }) {
            replaced.append(latest)
        }
        replaced.removeAll { $0.version.versionId == offered.versionId }
        latest = Seen(version: offered, at: date)
        replaced = Array(replaced.suffix(Self.capacity))
        return true
    }

    /// Notes `version`, installed from the platform, when its tag is a higher semantic version than any
    /// noted before. `false` when nothing changed.
    @discardableResult
    package mutating func noteInstalled(_ version: AppVersion, at date: Date) -> Bool {
        guard let tag = version.versionTag.flatMap(SemanticVersion.init) else { return false }
        if let installed, let highest = installed.version.versionTag.flatMap(SemanticVersion.init), !(highest < tag) { return false }
        installed = Seen(version: version, at: date)
        return true
    }

    /// Takes `offered`, a rollback the user asked for, as the latest from now on.
    package mutating func allow(_ offered: AppVersion, at date: Date) {
        allowed.removeAll { $0.version.versionId == offered.versionId }
        allowed.append(Seen(version: offered, at: date))
        allowed = Array(allowed.suffix(Self.capacity))
        // The newer latest is not replaced by a version the user went back to: answered again, it is
        // an update, not a rollback.
        let newer = latest
        if let installed, installed.version.versionId != offered.versionId { self.installed = nil }
        replaced.removeAll { $0.version.versionId == offered.versionId }
        latest = Seen(version: offered, at: date)
        if let newer, newer.version.versionId != offered.versionId { replaced.removeAll { $0.version.versionId == newer.version.versionId } }
    }
}

extension LatestHistory {
    static let format = "miniapp.latest-history"

    /// The document in `bytes`; `nil` when it is not one.
    package init?(json bytes: [UInt8]) {
        guard case .object(let fields)? = JSONReader.value(bytes), case .string(Self.format)? = fields["format"],
              case .number(1)? = fields["version"] else { return nil }
        func seen(_ value: JSONValue) -> Seen? {
            guard case .object(let parts) = value, case .string(let versionId)? = parts["versionId"], Identifier.isValid(versionId),
                  case .string(let at)? = parts["seenAt"], let date = RecordCoding.parse(at) else { return nil }
            let tag: String?
            switch parts["versionTag"] {
            case nil, .null?: tag = nil
            case .string(let text)?: tag = text
            default: return nil
            }
            return Seen(version: AppVersion(versionId: versionId, versionTag: tag), at: date)
        }
        func list(_ key: String) -> [Seen]? {
            switch fields[key] {
            case nil: return []
            case .array(let items)?:
                let read = items.compactMap(seen)
                return read.count == items.count ? read : nil
            default: return nil
            }
        }
        switch fields["latest"] {
        case nil, .null?: latest = nil
        case let value?:
            guard let read = seen(value) else { return nil }
            latest = read
        }
        switch fields["installedHighest"] {
        case nil, .null?: installed = nil
        case let value?:
            guard let read = seen(value) else { return nil }
            installed = read
        }
        guard let replaced = list("replaced"), let allowed = list("allowed") else { return nil }
        self.replaced = replaced
        self.allowed = allowed
    }

    /// The document, as ``init(json:)`` reads it.
    package var json: Data {
        func seen(_ seen: Seen) -> JSONValue {
            .object([
                "versionId": .string(seen.version.versionId), "versionTag": seen.version.versionTag.map(JSONValue.string) ?? .null,
                "seenAt": .string(RecordCoding.format(seen.at)),
            ])
        }
        let document = JSONValue.object([
            "format": .string(Self.format), "version": .number(1), "latest": latest.map(seen) ?? .null,
            "replaced": .array(replaced.map(seen)), "allowed": .array(allowed.map(seen)), "installedHighest": installed.map(seen) ?? .null,
        ])
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return (try? encoder.encode(document)) ?? Data()
    }
}

/// A version tag read as a semantic version (semver.org 2.0.0; a leading `v` is allowed): the order
/// of versions the rollback check compares.
package struct SemanticVersion: Sendable, Comparable {
    let core: [UInt64]
    /// The pre-release identifiers; a version with some comes before the same version without.
    let prerelease: [String]

    package init?(_ text: String) {
        var text = Substring(text)
        if text.first == "v" || text.first == "V" { text = text.dropFirst() }
        if let plus = text.firstIndex(of: "+") { text = text[..<plus] }
        var prerelease: [String] = []
        if let dash = text.firstIndex(of: "-") {
            prerelease = text[text.index(after: dash)...].split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard !prerelease.isEmpty, prerelease.allSatisfy({ !$0.isEmpty && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") } }) else { return nil }
            text = text[..<dash]
        }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        var core: [UInt64] = []
        for part in parts {
            guard !part.isEmpty, part.allSatisfy({ $0.isASCII && $0.isNumber }), part == "0" || part.first != "0", let number = UInt64(part) else { return nil }
            core.append(number)
        }
        self.core = core
        self.prerelease = prerelease
    }

    package static func < (lhs: SemanticVersion, rhs: SemanticVersion) -> Bool {
        if lhs.core != rhs.core { return lhs.core.lexicographicallyPrecedes(rhs.core) }
        switch (lhs.prerelease.isEmpty, rhs.prerelease.isEmpty) {
        case (true, _): return false
        case (false, true): return true
        case (false, false): break
        }
        for (left, right) in zip(lhs.prerelease, rhs.prerelease) where left != right {
            switch (UInt64(left), UInt64(right)) {
            case let (l?, r?): return l < r
            case (_?, nil): return true
            case (nil, _?): return false
            case (nil, nil): return left < right
            }
        }
        return lhs.prerelease.count < rhs.prerelease.count
    }

    package static func == (lhs: SemanticVersion, rhs: SemanticVersion) -> Bool {
        lhs.core == rhs.core && lhs.prerelease == rhs.prerelease
    }
}

extension BundleCache {
    /// `history/<namespace>`: the memory of each app's latest versions on this namespace's platform.
    var historyDirectory: String { root + "/history/" + namespace.key }

    /// An app's memory: one per mode, since preview mode answers unpublished versions as the latest.
    func historyPath(appId: String, preview: Bool = false) -> String { historyDirectory + "/" + appId + (preview ? ".preview.json" : ".json") }

    /// What the cache remembers of the latest versions of `appId`: empty when it remembers nothing;
    /// ``CacheError/unreadable(path:what:)`` when the memory exists and cannot be read (an unreadable
    /// memory would let any version through). Blocks for a small file's read.
    private func latestHistory(appId: String, preview: Bool = false) throws(CacheError) -> LatestHistory {
        guard Identifier.isValid(appId) else { return LatestHistory() }
        let path = historyPath(appId: appId, preview: preview)
        var info = stat()
        guard lstat(path, &info) == 0 else {
            guard errno == ENOENT || errno == ENOTDIR else { throw .system(path) }
            return LatestHistory()
        }
        guard (info.st_mode & S_IFMT) == S_IFREG, let bytes = FileReading.contents(path, followingLinks: false), let history = LatestHistory(json: bytes) else {
            throw .unreadable(path: path, what: "the memory of app \(appId)'s latest versions")
        }
        return history
    }

    /// Writes the memory of `appId`'s latest versions, whole or not at all; synced to the disk when
    /// `durable`.
    private func writeLatestHistory(_ history: LatestHistory, appId: String, preview: Bool = false, durable: Bool = false) throws(CacheError) {
        try prepare()
        for directory in [root + "/history", historyDirectory] {
            if mkdir(directory, 0o755) != 0, errno != EEXIST { throw .system(directory) }
            try Self.requireRealDirectory(directory)
        }
        try Durability.writeAtomically(history.json, to: historyPath(appId: appId, preview: preview), durable: durable)
    }

    /// The rollback that `offered` as the latest version of `appId` would be, from the memory and the
    /// versions installed from this platform; `nil` when it is none or nothing is remembered. Blocks.
    package func rollback(appId: String, offered: AppVersion, preview: Bool = false) throws(CacheError) -> Rollback? {
        let history = try latestHistory(appId: appId, preview: preview)
        return history.rollback(appId: appId, offered: offered, installed: installedFromPlatform(appId: appId, preview: preview))
    }

    /// What `offered`, the platform's latest version of `appId`, is to the memory: the rollback it would
    /// be (as ``rollback(appId:offered:preview:)`` answers), and whether the memory holds it as the latest
    /// already. Blocks.
    func latestCheck(appId: String, offered: AppVersion, preview: Bool) throws(CacheError) -> (rollback: Rollback?, remembered: Bool) {
        let history = try latestHistory(appId: appId, preview: preview)
        return (history.rollback(appId: appId, offered: offered, installed: installedFromPlatform(appId: appId, preview: preview)), history.latest?.version == offered)
    }

    /// Remembers `offered` as the latest version of `appId` (as one the user went back to, when
    /// `allowed`), reading the memory afresh: the install may have noted itself meanwhile. A latest
    /// replaced is what a power cut must not take back: that write is synced. Blocks.
    func remember(latest offered: AppVersion, appId: String, preview: Bool, allowed: Bool) throws(CacheError) {
        var history = try latestHistory(appId: appId, preview: preview)
        let replacing = history.latest != nil
        if allowed {
            history.allow(offered, at: Date())
        } else if !history.accept(offered, at: Date()) {
            return
        }
        try writeLatestHistory(history, appId: appId, preview: preview, durable: replacing)
    }

    /// Notes `version`, installed from the platform at `date`, for the rollback check (see
    /// ``LatestHistory/noteInstalled(_:at:)``); a failure to note it leaves the cache's records to tell.
    /// Blocks.
    func noteInstalled(_ version: AppVersion, appId: String, preview: Bool, at date: Date) {
        var history = try? latestHistory(appId: appId, preview: preview)
        if history?.noteInstalled(version, at: date) == true, let history {
            try? writeLatestHistory(history, appId: appId, preview: preview)
        }
    }

    /// The versions of `appId` cached in this namespace that came from its platform (not local bundles)
    /// in the same mode (a version tried in preview does not count outside it).
    private func installedFromPlatform(appId: String, preview: Bool = false) -> [AppVersion] {
        records(appId: appId).filter { ($0.installedSource ?? $0.source) != .bundle && (preview || !$0.preview) }
            .map { AppVersion(versionId: $0.versionId, versionTag: $0.versionTag) }
    }

    /// Every memory file of this namespace that cannot be read, for `cache verify`.
    package func unreadableHistories() -> [(appId: String, path: String)] {
        FileReading.children(of: historyDirectory).sorted().compactMap { name in
            guard name.hasSuffix(".json") else { return nil }
            let preview = name.hasSuffix(".preview.json")
            let appId = String(name.dropLast(preview ? 13 : 5))
            do {
                _ = try latestHistory(appId: appId, preview: preview)
                return nil
            } catch {
                return (appId, historyPath(appId: appId, preview: preview))
            }
        }
    }
}

extension BundleCache {
    /// The rollbacks among the latest versions of `list`, by index: only apps the cache remembers are
    /// looked at (one listing of the memory's folder for the whole list). A memory that cannot be read
    /// is left to `cache verify` and to the download it would stop.
    package func rollbacks(in list: AppListText, preview: Bool = false) -> [Int: Rollback] {
        let suffix = preview ? ".preview.json" : ".json"
        let remembered = Set(FileReading.children(of: historyDirectory).filter { $0.hasSuffix(suffix) && (preview || !$0.hasSuffix(".preview.json")) }
            .map { String($0.dropLast(suffix.count)) })
        guard !remembered.isEmpty else { return [:] }
        return list.withTexts { texts in
            var found: [Int: Rollback] = [:]
            for (index, entry) in list.entries.enumerated() {
                guard let appId = texts.string(entry[.id]), remembered.contains(appId), let versionId = texts.string(entry[.versionId]),
                      let rollback = try? rollback(appId: appId, offered: AppVersion(versionId: versionId, versionTag: texts.string(entry[.versionTag])), preview: preview)
                else { continue }
                found[index] = rollback
            }
            return found
        }
    }
}

extension BundleCache {
    /// A file the cache keeps about itself that exists and cannot be read: an install record (then the
    /// version is not taken as installed, and `cache verify` says why), or an app's memory of its latest
    /// versions (`versionId` `nil`).
    package struct UnreadableFile: Sendable {
        package var appId: String
        package var versionId: String?
        package var path: String
        package var problem: String
    }

    /// Every unreadable install record and memory of this namespace (of `appId`, or of every app).
    package func unreadableFiles(appId: String? = nil) -> [UnreadableFile] {
        var found: [UnreadableFile] = []
        if Self.isRealDirectory(root + "/bundles"), Self.isRealDirectory(namespaceDirectory) {
            let apps = appId.map { [$0] } ?? FileReading.children(of: namespaceDirectory).sorted()
            for app in apps where Identifier.isValid(app) && Self.isRealDirectory(namespaceDirectory + "/" + app) {
                for version in FileReading.children(of: namespaceDirectory + "/" + app).sorted() where Identifier.isValid(version) {
                    let directory = versionDirectory(appId: app, versionId: version), path = directory + "/record.json"
                    var info = stat()
                    guard Self.isRealDirectory(directory), lstat(path, &info) == 0, record(appId: app, versionId: version) == nil else { continue }
                    found.append(UnreadableFile(
                        appId: app, versionId: version, path: path,
                        problem: "its install record (\(path)) cannot be read: reinstall it with --force, or remove it"
                    ))
                }
            }
        }
        for (app, path) in unreadableHistories() where appId == nil || app == appId {
            found.append(UnreadableFile(
                appId: app, versionId: nil, path: path,
                problem: "the memory of its latest versions (\(path)) cannot be read: remove the file (rollbacks are then told by version tags only)"
            ))
        }
        if appId == nil {
            for path in unreadableTUFMetadata() {
                found.append(UnreadableFile(
                    appId: "(TUF metadata)", versionId: nil, path: path,
                    problem: "the kept TUF metadata \(path) cannot be read as the role it names: remove the file (the next update fetches it again)"
                ))
            }
        }
        return found
    }

    /// The TUF metadata kept for this namespace (`tuf/<namespace>/`) that cannot be read, or is not
    /// metadata of the role its name says.
    package func unreadableTUFMetadata() -> [String] {
        let folder = root + "/tuf/" + namespace.key
        return FileReading.children(of: folder).sorted().compactMap { name -> String? in
            guard name.hasSuffix(".json") else { return nil }
            let path = folder + "/" + name
            let role = String(name.dropLast(5)).removingPercentEncoding ?? ""
            let type = ["root", "timestamp", "snapshot"].contains(role) ? role : "targets"
            guard let bytes = FileReading.contents(path), let envelope = try? TUFEnvelope(bytes), case .object(let signed) = envelope.signed,
                  signed["_type"] == .string(type) else { return path }
            return nil
        }
    }
}
