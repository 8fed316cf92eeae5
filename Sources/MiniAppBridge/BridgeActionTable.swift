package import MiniAppCore

/// How the injected script turns an answer's text into what the SDK's method resolves with, as the SDK's
/// own bridge does for the action.
package enum BridgeAnswerForm: String, Sendable, CaseIterable {
    /// The text as it is.
    case raw
    /// The text parsed as JSON.
    case json
    /// `"true"` or `"1"` is `true`, anything else `false`.
    case bool
    /// Nothing (`undefined`).
    case none
    /// The text, or `null` for `"null"`.
    case nullable
    /// The text parsed as JSON, or `null` for `"null"`.
    case jsonNullable
    /// An access token: its `validUntil` (epoch milliseconds) made a `Date`.
    case token
    /// The host's environment, with the bridge's `platform` added.
    case environment
    /// The text, or `null` for `"CANCELLED"` (what an internal browser answers when the user left it).
    case unlessCancelled
}

/// One method of `window.MiniAppBridge` that sends an action, as the SDK calls it.
package struct BridgeScriptMethod: Sendable {
    /// Where the method is: `getUserName`, or a member of one of the bridge's objects such as
    /// `utilityManager.logEvent`; further paths name the same function.
    package let paths: [String]
    /// The method's JS parameter list.
    package let arguments: String
    /// The JS expression of the message's `param` (`null` when the action takes none).
    package let param: String
    /// How the answer's text becomes the method's result.
    package let form: BridgeAnswerForm
    /// Whether a rejection is the SDK's typed error (what `parseMiniAppError` makes of `{type, message}`)
    /// or the host's text as sent: the SDK's bridge does one or the other per action.
    package let parsesErrors: Bool

    init(_ paths: [String], arguments: String = "", param: String = "null", _ form: BridgeAnswerForm, parsesErrors: Bool) {
        self.paths = paths
        self.arguments = arguments
        self.param = param
        self.form = form
        self.parsesErrors = parsesErrors
    }
}

/// One action of the SDK's bridge, declared once: its name, whether this bridge answers it, the custom
/// permission that gates it, and the script methods that send it.
///
/// ``BridgeDispatcher`` answers exactly the actions declared here (a host's own actions aside), checks
/// `permission` before the host is asked, and lists the answered ones in `getFeatureList`; the browser
/// host's script is made from `methods`. A new action is one declaration here and, when answered, its
/// case in ``BridgeDispatcher``'s dispatch (a test fails when either is missing).
package struct BridgeActionDeclaration: Sendable {
    /// What the bridge does with the action.
    package enum Answer: Sendable, Equatable {
        /// The bridge answers it, from its own state or the host's services.
        case answered
        /// The SDK sends it and this bridge has no way to carry it out: the SDK's not-supported error,
        /// unless the host registered an action of that name.
        case notSupported
    }

    /// The custom permission a call needs: the manifest must declare it and the store must say
    /// `ALLOWED` before the host is asked.
    package enum Gate: Sendable, Equatable {
        /// None: any app may call it.
        case open
        /// This one, whatever the parameters.
        case permission(KnownPermission)
        /// The one that the string parameter `parameter` names, by its value (`requestPermission` of
        /// `location` needs LOCATION); none for any other value.
        case named(by: String, [String: KnownPermission])

        /// The permission a call with `param` needs.
        package func permission(for param: JSONValue) -> KnownPermission? {
            switch self {
            case .open: nil
            case .permission(let permission): permission
            case .named(let parameter, let permissions):
                if case .string(let value)? = param[parameter] { permissions[value] } else { nil }
            }
        }

        /// Every permission some call may need.
        package var permissions: [KnownPermission] {
            switch self {
            case .open: []
            case .permission(let permission): [permission]
            case .named(_, let permissions): permissions.keys.sorted().compactMap { permissions[$0] }
            }
        }
    }

    package let name: String
    package let answer: Answer
    package let gate: Gate
    package let methods: [BridgeScriptMethod]

    /// The permission every call needs, whatever its parameters; `nil` when none does.
    package var permission: KnownPermission? {
        if case .permission(let permission) = gate { permission } else { nil }
    }

    private init(name: String, answer: Answer, gate: Gate, methods: [BridgeScriptMethod]) {
        self.name = name
        self.answer = answer
        self.gate = gate
        self.methods = methods
    }

    init(_ name: String, _ answer: Answer, permission: KnownPermission? = nil, _ methods: BridgeScriptMethod...) {
        self.init(name: name, answer: answer, gate: permission.map(Gate.permission) ?? .open, methods: methods)
    }

    /// An action the bridge answers.
    init(_ name: String, permission: KnownPermission? = nil, _ methods: BridgeScriptMethod...) {
        self.init(name: name, answer: .answered, gate: permission.map(Gate.permission) ?? .open, methods: methods)
    }

    /// An action the bridge answers, behind the permission a parameter names.
    init(_ name: String, gate: Gate, _ methods: BridgeScriptMethod...) {
        self.init(name: name, answer: .answered, gate: gate, methods: methods)
    }
}

extension BridgeDispatcher {
    /// Every action of the SDK's bridge, by name.
    package static let declarations: [String: BridgeActionDeclaration] = Dictionary(
        uniqueKeysWithValues: declarationList.map { ($0.name, $0) }
    )

    /// Every action of the SDK's bridge, in the order the script defines their methods.
    package static let declarationList: [BridgeActionDeclaration] = [
        // Identity and environment.
        .init("getUniqueId", BridgeScriptMethod(["getUniqueId"], .raw, parsesErrors: false)),
        .init("getMessagingUniqueId", BridgeScriptMethod(["getMessagingUniqueId"], .raw, parsesErrors: false)),
        .init("getMauid", BridgeScriptMethod(["getMauid"], .raw, parsesErrors: false)),
        .init("getHostEnvironmentInfo", BridgeScriptMethod(["getHostEnvironmentInfo"], .environment, parsesErrors: false)),
        .init("isDarkMode", BridgeScriptMethod(["isDarkMode"], .bool, parsesErrors: true)),
        .init("getHostAppThemeColors", BridgeScriptMethod(["getHostAppThemeColors"], .json, parsesErrors: true)),
        .init("getFeatureList", BridgeScriptMethod(["getFeatureList"], .json, parsesErrors: true)),
        .init("setScreenOrientation", BridgeScriptMethod(["setScreenOrientation"], arguments: "action", param: "{ action: action }", .raw, parsesErrors: false)),
        .init("closeMiniApp", BridgeScriptMethod(["closeMiniApp"], arguments: "withAlert", param: "{ withConfirmationAlert: withAlert }", .raw, parsesErrors: true)),
        .init("miniAppFinishedLoading", BridgeScriptMethod(["miniAppFinishedLoading"], .raw, parsesErrors: false)),
        .init("setCloseAlert", BridgeScriptMethod(["setCloseAlert"], arguments: "info", param: "{ closeAlertInfo: info }", .raw, parsesErrors: true)),
        // Permissions.
        .init("requestCustomPermissions", BridgeScriptMethod(["requestCustomPermissions"], arguments: "permissions", param: "{ permissions: permissions }", .json, parsesErrors: false)),
        .init("getPermissionStatus", BridgeScriptMethod(["utilityManager.getPermissionStatus"], arguments: "name", param: "{ permissionName: name }", .raw, parsesErrors: true)),
        .init("requestPermission", gate: .named(by: "permission", ["location": .location]), BridgeScriptMethod(["requestPermission"], arguments: "permission", param: "{ permission: permission }", .raw, parsesErrors: false)),
        // The user's data, each behind its custom permission.
        .init("getUserName", permission: .userName, BridgeScriptMethod(["getUserName"], .raw, parsesErrors: false)),
        .init("getProfilePhoto", permission: .profilePhoto, BridgeScriptMethod(["getProfilePhoto"], .raw, parsesErrors: false)),
        .init("getContacts", permission: .contactList, BridgeScriptMethod(["getContacts"], arguments: "encoded", param: "{ isContactsEncodingRequired: encoded }", .json, parsesErrors: false)),
        .init("getAccessToken", permission: .accessToken, BridgeScriptMethod(["getAccessToken"], arguments: "audience, scopes", param: "{ audience: audience, scopes: scopes }", .token, parsesErrors: true)),
        .init("getExchangeToken", permission: .accessToken, BridgeScriptMethod(["getExchangeToken"], arguments: "audience, scopes", param: "{ audience: audience, scopes: scopes }", .token, parsesErrors: true)),
        .init("getPoints", permission: .points, BridgeScriptMethod(["getPoints"], .json, parsesErrors: true)),
        .init("getPhoneNumber", BridgeScriptMethod(["getPhoneNumber"], .raw, parsesErrors: false)),
        // The host shows its own contact picker: the user chooses, so no custom permission gates it.
        .init("sendMessageToContact",
              BridgeScriptMethod(["sendMessageToContact"], arguments: "message", param: "{ messageToContact: withBanner(message) }", .nullable, parsesErrors: false)),
        .init("sendMessageToContactId", permission: .sendMessage,
              BridgeScriptMethod(["sendMessageToContactId"], arguments: "id, message", param: "{ contactId: id, messageToContact: withBanner(message) }", .nullable, parsesErrors: false)),
        .init("sendMessageToMultipleContacts",
              BridgeScriptMethod(["sendMessageToMultipleContacts"], arguments: "message", param: "{ messageToContact: withBanner(message) }", .jsonNullable, parsesErrors: false)),
        .init("downloadFile", permission: .fileDownload,
              BridgeScriptMethod(["downloadFile"], arguments: "filename, url, headers", param: "{ filename: filename, url: url, headers: headers }", .nullable, parsesErrors: true)),
        // Secure storage.
        .init("setSecureStorageItems", BridgeScriptMethod(["setSecureStorage"], arguments: "items", param: "{ secureStorageItems: items }", .none, parsesErrors: true)),
        .init("getSecureStorageItem", BridgeScriptMethod(["getSecureStorageItem"], arguments: "key", param: "{ secureStorageKey: key }", .raw, parsesErrors: true)),
        .init("removeSecureStorageItems", BridgeScriptMethod(["removeSecureStorageItems"], arguments: "keys", param: "{ secureStorageKeyList: keys }", .none, parsesErrors: true)),
        .init("clearSecureStorage", BridgeScriptMethod(["clearSecureStorage"], .none, parsesErrors: true)),
        .init("getSecureStorageSize", BridgeScriptMethod(["getSecureStorageSize"], .json, parsesErrors: true)),
        // The user's session and the device.
        .init("isLoggedIn", BridgeScriptMethod(["userProfileManager.isLoggedIn", "isLoggedIn"], .bool, parsesErrors: true)),
        .init("canOpenAppDeeplink", BridgeScriptMethod(["canOpenAppDeeplink"], arguments: "url", param: "{ deeplinkURL: url }", .bool, parsesErrors: false)),
        .init("isAppDeeplinkSupported", BridgeScriptMethod(["isAppDeeplinkSupported"], arguments: "url", param: "{ deeplinkURL: url }", .bool, parsesErrors: false)),
        .init("isEsimSupported", BridgeScriptMethod(["isEsimSupported"], .bool, parsesErrors: true)),
        // What the app tells its host.
        .init("sendJsonToHostapp", BridgeScriptMethod(["sendJsonToHostapp"], arguments: "info", param: "{ jsonInfo: info }", .raw, parsesErrors: true)),
        .init("sendInfoToHostapp", BridgeScriptMethod(["sendInfoToHostapp"], arguments: "info", param: "{ universalBridgeInfo: info }", .raw, parsesErrors: true)),
        .init("sendAnalytics", BridgeScriptMethod(["sendAnalytics"], arguments: "info", param: "{ analyticsInfo: info }", .raw, parsesErrors: true)),
        .init("configureAnalytics", BridgeScriptMethod(["configureAnalytics"], arguments: "config", param: "config", .raw, parsesErrors: true)),
        .init("logEvent", BridgeScriptMethod(["utilityManager.logEvent", "logEvent"], arguments: "message, type", param: "{ logMessage: message, logType: type === undefined ? 'debug' : type }", .bool, parsesErrors: true)),
        // What the host shows or keeps for the app: its services show the user interface, the store keeps
        // preferences and receipts.
        .init("showAd",
              BridgeScriptMethod(["showInterstitialAd"], arguments: "id", param: "{ adType: 0, adUnitId: id }", .raw, parsesErrors: false),
              BridgeScriptMethod(["showRewardedAd"], arguments: "id", param: "{ adType: 1, adUnitId: id }", .json, parsesErrors: false)),
        .init("loadAd",
              BridgeScriptMethod(["loadInterstitialAd"], arguments: "id", param: "{ adType: 0, adUnitId: id }", .raw, parsesErrors: false),
              BridgeScriptMethod(["loadRewardedAd"], arguments: "id", param: "{ adType: 1, adUnitId: id }", .raw, parsesErrors: false)),
        .init("shareInfo", BridgeScriptMethod(["shareInfo"], arguments: "info", param: "{ shareInfo: info }", .raw, parsesErrors: false)),
        .init("setMiniAppPreference",
              BridgeScriptMethod(["preferences.set", "set"], arguments: "key, value", param: "{ preferenceKey: key, preferenceValue: value }", .raw, parsesErrors: true)),
        .init("getMiniAppPreference", BridgeScriptMethod(["preferences.get", "get"], arguments: "key", param: "{ preferenceKey: key }", .raw, parsesErrors: true)),
        .init("removeMiniAppPreference", BridgeScriptMethod(["preferences.remove", "remove"], arguments: "key", param: "{ preferenceKey: key }", .raw, parsesErrors: true)),
        .init("clearMiniAppPreferences", BridgeScriptMethod(["preferences.clearMiniAppPreferences", "clearMiniAppPreferences"], .raw, parsesErrors: true)),
        .init("getAllProducts", BridgeScriptMethod(["getAllProducts"], .json, parsesErrors: true)),
        .init("purchaseProductWith", BridgeScriptMethod(["purchaseProductWith"], arguments: "id", param: "{ productId: id }", .json, parsesErrors: true)),
        .init("consumeProductWith",
              BridgeScriptMethod(["consumePurchaseWith"], arguments: "id, transactionId", param: "{ productId: id, productTransactionId: transactionId }", .json, parsesErrors: true)),
        .init("getAllCookies", BridgeScriptMethod(["getAllCookies"], .json, parsesErrors: true)),
        .init("getCookies", BridgeScriptMethod(["getCookies"], arguments: "names", param: "{ cookieList: names }", .json, parsesErrors: true)),
        .init("launchExternalBrowser", BridgeScriptMethod(["browserManager.launchExternalBrowser", "launchExternalBrowser"], arguments: "url", param: "{ url: url }", .bool, parsesErrors: true)),
        .init("launchInternalBrowser",
              BridgeScriptMethod(["browserManager.launchInternalBrowser", "launchInternalBrowser"], arguments: "options", param: "typeof options === 'string' ? { url: options } : options", .bool, parsesErrors: true)),
        .init("launchInteractiveBrowser",
              BridgeScriptMethod(["browserManager.launchInteractiveBrowser", "launchInteractiveBrowser"], arguments: "options", param: "typeof options === 'string' ? { url: options } : options", .bool, parsesErrors: true)),
        .init("loadUsingHTMLString",
              BridgeScriptMethod(["browserManager.loadUsingHTMLString"], arguments: "options", param: "options", .unlessCancelled, parsesErrors: true)),
        .init("triggerLoginUI", BridgeScriptMethod(["userProfileManager.triggerLoginUI", "triggerLoginUI"], .bool, parsesErrors: true)),
        .init("forceLogout", BridgeScriptMethod(["userProfileManager.forceLogout"], .bool, parsesErrors: true)),
        .init("allowBackForwardNavigationGestures",
              BridgeScriptMethod(["webviewConfigManager.allowBackForwardNavigationGestures", "allowBackForwardNavigationGestures"], arguments: "allow", param: "{ shouldAllowNavigationGestures: allow }", .bool, parsesErrors: true)),
        .init("forceInternalWebView",
              BridgeScriptMethod(["webviewConfigManager.forceInternalWebView", "forceInternalWebView"], arguments: "force", param: "{ shouldOpenInNativeWebView: force }", .bool, parsesErrors: true)),
        .init("launchAppSettings", BridgeScriptMethod(["utilityManager.launchAppSettings"], .bool, parsesErrors: true)),
        .init("isSimInstalled", BridgeScriptMethod(["utilityManager.isSimInstalled", "isSimInstalled"], .bool, parsesErrors: true)),
        .init("isAppInstalledInDevice",
              BridgeScriptMethod(["utilityManager.isAppInstalledInDevice", "isAppInstalledInDevice"], arguments: "target",
                    param: "String(target).indexOf('://') >= 0 ? { url: target } : { packageName: target }", .bool, parsesErrors: true)),
        .init("shouldClearNotifications",
              BridgeScriptMethod(["notificationBridge.shouldClearNotifications", "shouldClearNotifications"], arguments: "type", param: "{ notificationType: type }", .raw, parsesErrors: false)),
        .init("shouldUpdateBadgeNumber",
              BridgeScriptMethod(["notificationBridge.shouldUpdateBadgeNumber", "shouldUpdateBadgeNumber"], arguments: "info", param: "{ notificationInfo: info }", .raw, parsesErrors: false)),
        .init("shouldUpdateNotificationInfo",
              BridgeScriptMethod(["notificationBridge.shouldUpdateNotificationInfo", "shouldUpdateNotificationInfo"], arguments: "info", param: "{ notificationDetailedInfo: info }", .raw, parsesErrors: false)),
        // The device's position, as iOS hosts answer it; the browser host's script routes the frame's
        // `navigator.geolocation` through it, so the frame needs no permission of its own.
        .init("getCurrentPosition", permission: .location,
              BridgeScriptMethod(["getCurrentPosition"], arguments: "options", param: "{ locationOptions: options === undefined ? null : options }", .json, parsesErrors: false)),
        .init("getImageFromGallery", BridgeScriptMethod(["galleryManager.getImageFromGallery", "getImageFromGallery"], .json, parsesErrors: true)),
        // What a browser cannot do: the SDK's not-supported error, unless the host has an action of that name.
        .init("launchAppUsingDeeplink", .notSupported,
              BridgeScriptMethod(["utilityManager.launchAppUsingDeeplink", "launchAppUsingDeeplink"], arguments: "url", param: "{ url: url }", .bool, parsesErrors: true)),
        .init("launchAppUsingPackageName", .notSupported,
              BridgeScriptMethod(["utilityManager.launchAppUsingPackageName", "launchAppUsingPackageName"], arguments: "name", param: "{ packageName: name }", .bool, parsesErrors: true)),
        .init("startICChipKyc", .notSupported, BridgeScriptMethod(["oneClickSdk.startICChipKyc"], arguments: "config", param: "config", .bool, parsesErrors: true)),
        .init("setupAndInstallEsim", .notSupported, BridgeScriptMethod(["setupAndInstallEsim"], arguments: "config", param: "{ eSimConfig: config }", .bool, parsesErrors: true)),
    ]
}
