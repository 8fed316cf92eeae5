public import Foundation
public import MiniAppBridge
public import MiniAppCore
public import MiniAppKit
public import MiniAppPermissions

/// One thing the browser host tells its observers (``BrowserHost/callbacks(buffered:)``): a prompt or
/// sheet that needs the user, which the observer may answer, or a change of state. A `switch` on
/// ``kind`` covers every kind.
public struct HostCallback: Sendable {
    /// Its place among the host's callbacks, from 1: an observer sees them in this order.
    public let sequence: Int
    /// When it happened.
    public let date: Date
    /// What happened.
    public let kind: Kind

    /// What a callback is about.
    public enum Kind: Sendable {
        // MARK: Callbacks that need the user

        /// A prompt or sheet waits for the user (on the host page): answer it, cancel it, or update it
        /// while it is shown, through the prompt itself. The first answer wins, from the page or from code.
        case prompt(HostPrompt)
        /// A prompt shown was updated (a progress, a changed message): the page shows it.
        case promptUpdated(HostPrompt, HostPrompt.Update)
        /// A prompt is settled, and by whom.
        case promptSettled(HostPrompt, HostPrompt.Settlement)

        // MARK: What an app does

        /// An app's bridge answered a call.
        case call(appId: String, BridgeCall)
        /// An app told its host something it shows or acts on (another host's dialect).
        case signal(appId: String, BridgeSignal)
        /// The host serves an app (a version installed, or a development folder).
        case appOpened(appId: String, versionId: String)
        /// An app stopped running, and why.
        case appClosed(appId: String, AppClosing)
        /// An app's capability was granted or ended (never its token).
        case capability(appId: String, BridgeCapabilityEvent)

        // MARK: Changes of state

        /// An app's launch gate: when the app opens, then each time it opens or closes.
        case launchGate(appId: String, LaunchDecision)
        /// A permission decision changed in the store, from this process or another sharing the store.
        case permissionChanged(PermissionDecisionEvent)
        /// The host's profile was replaced (the panel's editor, or ``BrowserHost/setProfile(_:)``).
        case profileChanged(HostProfile)
        /// An install of the installer's progressed, finished or failed.
        case install(InstallEvent)
    }

    /// Why an app stopped running.
    public enum AppClosing: Sendable, Equatable {
        /// The app asked to (`closeMiniApp`).
        case byApp
        /// The user closed it on the host page.
        case byUser
        /// Another version, or a changed development folder's manifest, replaced it.
        case replaced
        /// The host stopped.
        case hostStopped
    }
}
