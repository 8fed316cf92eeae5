import Foundation
import MiniAppBridge
import MiniAppCore

/// The host page (`Resources/host-page.html`, `host.css`, `host.js` with `host-chrome.js`): the running
/// app in frames of its own origin, its permissions with a way to revoke them, the launch gate's
/// question, the prompts of `requestCustomPermissions`, and what the dialect's native host shows around
/// its app. Everything it shows that comes from an app or a manifest is set as text, never as markup.
///
/// Stable hooks for people and tools: `#miniapp-frame` (the app's frame shown: the active tab's), each
/// app frame in `#frames` with `data-tab` (its tab) and `data-active`; `#gate` with `#gate-allow`,
/// `#gate-deny`, `#gate-message`; `#miniapp-prompt` (a waiting prompt, `data-prompt-id`) with one
/// checkbox `input[data-permission="<name>"]` per permission, `#prompt-confirm`, `#prompt-allow-all`,
/// `#prompt-deny-all`; `#miniapp-external` (a page of another site the app opened) with `#external-link`
/// and `#external-close`; `#permissions` rows `[data-permission="<name>"]` with `data-status` and a
/// `button[data-action="allow" | "revoke"]`; `#status` for what happened last; `#miniapp-sheet` (the
/// host's own user interface an app waits on, `data-sheet-id` and `data-sheet`: `share`, `ad`,
/// `purchase`, `login`, `gallery` and `imageUpload` with `#sheet-file`, `message` with
/// `input[data-contact="<id>"]`, `download`, `html`, `device`) with `#sheet-ok` and `#sheet-cancel`;
/// `#host-log` rows `[data-info="<action or signal>"]` for what apps sent the host; `#devices` rows
/// `[data-device="camera" | "microphone" | "location"]` with `data-status` and `button[data-action=
/// "granted" | "denied" | "unknown"]` (the frame is allowed the camera and microphone the user granted
/// here). The native host's chrome: `#host-back` (Back: the app's while it overrides it), `#app-close`
/// and `#app-open`; `#tab-bar` buttons `[data-tab="<id>"]` with `aria-selected`; `#host-nav` buttons
/// `[data-path]` (Corva's dashboards and asset pages); `#host-states` badges `[data-state=
/// "authenticated" | "notifications" | "back-override" | "online" | "biometrics" | "page-loaded" |
/// "maximized" | "user"]` with `data-on`; `#host-notifications` rows `[data-notification]`;
/// `#miniapp-file` (the file viewer) with `#file-frame`, `#file-link`, `#file-close`; `#podcast` with
/// `#podcast-player` (an `audio` element) and `#now-playing-episode`, `#now-playing-podcast`;
/// `#miniapp-video` with `#video-player` and `#video-close`; `#sample-profile` when the host answers
/// from a sample profile; `body[data-app-maximized]`; `#prompt-update` and `#sheet-update` (with
/// `data-update-for`: what the host service updated on the prompt or sheet shown, a message and a
/// `progress`). For an app served from a development folder:
/// `#dev-panel` with `#dev-folder`, `#dev-problems` rows `[data-problem]` (the folder's check, and a
/// manifest.json that cannot be used), `#dev-warnings` rows `[data-warning]` (calls the manifest does
/// not allow for), `#dev-publish` (the command that publishes the folder); each app frame's
/// `data-loads` counts its loads.
enum HostPage {
    /// The page for `appId` (none: the list of `apps`), holding the session's secret and `data`.
    static func html(appId: String?, appOrigin: String?, apps: [String], dialect: String, session: String, data: JSONValue) -> String {
        func attribute(_ text: String) -> String {
            text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "\"", with: "&quot;")
                .replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
        }
        var fields: [String: String] = [
            "session": session, "app": attribute(appId ?? ""), "origin": attribute(appOrigin ?? ""), "apps": attribute(apps.joined(separator: " ")),
            "dialect": attribute(dialect),
        ]
        // JSONWriter.text escapes `<`, `>` and `&`: the data cannot end its script element.
        fields["data"] = JSONWriter.text(data)
        var page = PageResources.text(.hostPage)
        for (name, value) in fields { page = page.replacingOccurrences(of: "{{\(name)}}", with: value) }
        return page
    }

    /// The page's script: the host page's own, then the native host's chrome.
    static let script = PageResources.text(.hostScript) + PageResources.text(.hostChrome)

    /// The readable names of the permissions the SDKs know.
    static let labels: JSONValue = .object(Dictionary(uniqueKeysWithValues: KnownPermission.allCases.map { ($0.rawValue, .string(label(of: $0))) }))

    /// What the user reads for a permission, in the host's words.
    static func label(of permission: KnownPermission) -> String {
        switch permission {
        case .userName: "Your name"
        case .profilePhoto: "Your profile photo"
        case .contactList: "Your contacts"
        case .accessToken: "Access to Rakuten services for you"
        case .sendMessage: "Send messages to your contacts"
        case .location: "Your location"
        case .points: "Your points"
        case .fileDownload: "Download files to your device"
        }
    }
}

/// The panel for the app's developer (`Resources/panel.js` and `panel.css`), built inside the host
/// page's `#miniapp-panel`: the bridge's calls as they happen, host events sent to the app (the
/// dialect's, as that host sends them), notifications to post, the host's profile, the app's secure
/// storage, and errors forced on the app's actions. What an app sent (parameters, answers, storage) is
/// set as text, never as markup; access tokens in answers come masked from the server.
///
/// Stable hooks for people and tools, all inside `#miniapp-panel`: `#calls` rows `[data-action]` with
/// `data-outcome="success" | "error"` (newest first: the newest 50 that match the filter, of the last
/// 500 calls kept; `#calls-count` says how many match), `data-permission`
/// when a permission gates the action, and `.mp-answer`, `.mp-error`, `.mp-refusal` inside;
/// `#calls-filter` (text the rows must contain); `#event-name` (a `select` of the dialect's events, or a
/// name of any event for Rakuten's), `#event-message`, `#event-send`; `#notification-title`,
/// `#notification-body`, `#notification-post`; `#profile-editor` with `#profile-json` (the profile's JSON
/// document), `#profile-save` and `#profile-error`; `#permission-reset-name` (a declared permission) and
/// `#permission-reset` (undecided again: the app's next request asks); `#storage` rows `[data-key]` with
/// `input.mp-value`, `button[data-do="edit"]` and `button[data-do="remove"]`, then `#storage-key`,
/// `#storage-value`, `#storage-set`, `#storage-clear` and `#storage-size`; `#inject-action`,
/// `#inject-kind` (`notSupported`, `denied`, `timeout`), `#inject-seconds` (empty: the timeout never
/// answers until removed), `#inject-add`, and rows `[data-injected="<action>"]` with
/// `button[data-do="remove"]`; `#panel-status` for what happened last.
enum HostPanel {
    static let style = PageResources.text(.panelStyle)
    static let script = PageResources.text(.panelScript)
}
