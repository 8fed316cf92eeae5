/// The name and version miniapp reports to platforms and users.
@usableFromInline
package enum PackageInfo {
    /// The tool's name, as sent in `User-Agent` and `ras-sdk-name`.
    package static let name = "miniapp"
    /// The tool's version.
    @usableFromInline package static let version = "0.1.0"
    /// The `User-Agent` header value.
    package static var userAgent: String { "\(name)/\(version)" }
}
