/// The custom permissions the platform defines; a mini-app may name others, which are kept as unknown.
public enum KnownPermission: String, Sendable, CaseIterable {
    case userName = "rakuten.miniapp.user.USER_NAME"
    case profilePhoto = "rakuten.miniapp.user.PROFILE_PHOTO"
    case contactList = "rakuten.miniapp.user.CONTACT_LIST"
    case accessToken = "rakuten.miniapp.user.ACCESS_TOKEN"
    case sendMessage = "rakuten.miniapp.user.action.SEND_MESSAGE"
    case location = "rakuten.miniapp.device.LOCATION"
    case points = "rakuten.miniapp.user.POINTS"
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
