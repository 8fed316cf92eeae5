/// The name and version miniapp reports to platforms and users.
public enum PackageInfo {
    /// The tool's name, as sent in `User-Agent` and `ras-sdk-name`.
    public static let name = "miniapp"
    /// The tool's version.
    public static let version = "0.1.0"
    /// The `User-Agent` header value.
    public static var userAgent: String { "\(name)/\(version)" }
}
