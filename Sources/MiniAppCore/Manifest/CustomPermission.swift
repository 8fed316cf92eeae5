/// The custom permissions the platform defines; a mini-app may name others, which are kept as unknown.
public enum KnownPermission: String, Sendable, CaseIterable {
    /// The user's name (`USER_NAME`).
    case userName = "rakuten.miniapp.user.USER_NAME"
    /// The user's profile photo (`PROFILE_PHOTO`).
    case profilePhoto = "rakuten.miniapp.user.PROFILE_PHOTO"
    /// The user's contacts (`CONTACT_LIST`).
    case contactList = "rakuten.miniapp.user.CONTACT_LIST"
    /// Access tokens for the audiences the manifest names (`ACCESS_TOKEN`).
    case accessToken = "rakuten.miniapp.user.ACCESS_TOKEN"
    /// Sending messages to the user's contacts (`SEND_MESSAGE`).
    case sendMessage = "rakuten.miniapp.user.action.SEND_MESSAGE"
    /// The device's location (`LOCATION`).
    case location = "rakuten.miniapp.device.LOCATION"
    /// The user's points (`POINTS`).
    case points = "rakuten.miniapp.user.POINTS"
    /// Downloading files to the device (`FILE_DOWNLOAD`).
    case fileDownload = "rakuten.miniapp.device.FILE_DOWNLOAD"

    /// The short name used by the pair-values interchange shape, such as `USER_NAME`.
    public var shortName: String {
        String(rawValue[rawValue.index(after: rawValue.lastIndex(of: ".")!)...])
    }

    /// The permission with this full or short name, if it is a known one.
    public init?(name: String) {
        if let known = KnownPermission(rawValue: name) {
            self = known
        } else if let known = KnownPermission.allCases.first(where: { $0.shortName == name }) {
            self = known
        } else {
            return nil
        }
    }
}
