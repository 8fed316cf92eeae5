import Foundation

/// Fills the `__MANIFEST_<key>__` placeholders of a bundle's manifest.json from its `_locale` folder:
/// the exact language, then its language part, then `default`; an unknown key stays as it is.
public struct ManifestLocalizer: Sendable {
    /// The tables to look keys up in, most specific first.
    package let tables: [[String: String]]

    /// Whether `code` looks like a language code (`en`, `ja-JP`, `zh_Hant`, `default`).
    public static func isValidLanguage(_ code: String) -> Bool {
        !code.isEmpty && code.utf8.count <= 35 && code.utf8.allSatisfy { byte in
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }
    }

    /// A localizer for `language` reading `_locale/<code>/manifest.json` files under `bundleDirectory`.
    public init(bundleDirectory: String, language: String) {
        var codes = [language]
        if let part = language.split(whereSeparator: { $0 == "-" || $0 == "_" }).first, String(part) != language {
            codes.append(String(part))
        }
        if language != "default" { codes.append("default") }
        tables = codes.compactMap { code in
            guard ManifestLocalizer.isValidLanguage(code),
                  // A locale table is the bundle's own file: a symbolic link in its place is not read.
                  let bytes = FileReading.contents("\(bundleDirectory)/_locale/\(code)/manifest.json", followingLinks: false),
                  let table = try? JSONDecoder().decode([String: String].self, from: Data(bytes)) else { return nil }
            return table
        }
    }

    /// `text` with each placeholder whose key a table has replaced by its value.
    public func localize(_ text: String) -> String {
        guard text.contains("__MANIFEST_") else { return text }
        var result = ""
        var rest = Substring(text)
        while let start = rest.range(of: "__MANIFEST_") {
            result += rest[..<start.lowerBound]
            let afterPrefix = rest[start.upperBound...]
            guard let end = afterPrefix.range(of: "__") else {
                result += rest[start.lowerBound...]
                return result
            }
            let key = String(afterPrefix[..<end.lowerBound])
            if Self.isValidKey(key), let value = tables.lazy.compactMap({ $0[key] }).first {
                result += value
            } else {
                result += rest[start.lowerBound..<end.upperBound]
            }
            rest = afterPrefix[end.upperBound...]
        }
        return result + rest
    }

    /// `manifest` with the placeholders in every reason and customMetaData value filled in.
    public func localize(_ manifest: BundleManifest) -> BundleManifest {
        var localized = manifest
        localized.reqPermissions = manifest.reqPermissions.map { PermissionDeclaration(name: $0.name, reason: $0.reason.map(localize)) }
        localized.optPermissions = manifest.optPermissions.map { PermissionDeclaration(name: $0.name, reason: $0.reason.map(localize)) }
        localized.customMetaData = manifest.customMetaData.mapValues(localize)
        return localized
    }

    package static func isValidKey(_ key: String) -> Bool {
        !key.isEmpty && key.unicodeScalars.allSatisfy { scalar in
            (scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar))) || "_.-".unicodeScalars.contains(scalar)
        }
    }
}
