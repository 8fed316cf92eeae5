public import MiniAppBridge
public import MiniAppCore
import Synchronization

/// Something the browser host shows the user and waits on: a permission request, one of the host's
/// sheets (a share, a purchase, a picker...), or an app's closed launch gate. The host page shows it; a
/// host service that observes the host (``BrowserHost/callbacks(buffered:)``) gets the same prompt, and
/// may answer or cancel it, or update it while it is shown. The first answer wins, from either side; the
/// other sees it settled.
public final class HostPrompt: Sendable, Identifiable {
    /// The prompt's number, which the host page names it by (`data-prompt-id`, `data-sheet-id`).
    public let id: Int
    /// The app it is for.
    public let appId: String
    /// What it asks.
    public let kind: Kind

    /// What a prompt asks.
    public enum Kind: Sendable, Equatable {
        /// The app's request of custom permissions the user has not decided (`requestCustomPermissions`),
        /// with the manifest's reasons: answer with ``Answer/decisions(_:)``.
        case permissions([PermissionPrompt.Item])
        /// One of the host's sheets, by name (`share`, `ad`, `purchase`, `login`, `gallery`, `imageUpload`,
        /// `message`, `download`, `html`, `device`, `location`), with what it shows: answer with
        /// ``Answer/sheet(_:)`` as the host page does (MiniAppWebHost's *Observing the host*).
        case sheet(String, payload: JSONValue)
        /// The app's launch gate is closed: these required permissions are not allowed. Answer with
        /// ``Answer/launch(allowed:)``; the prompt is settled too when the gate opens any other way.
        case launchGate(missing: [String])
    }

    /// An answer to a prompt, of its kind.
    public enum Answer: Sendable, Equatable {
        /// Decisions on the permissions asked, by full name; a name left out stays undecided.
        case decisions([String: PermissionStatus])
        /// A sheet's answer, as the host page sends it.
        case sheet(JSONValue)
        /// The launch gate's missing permissions allowed (the app starts) or denied.
        case launch(allowed: Bool)
    }

    /// What changed in a prompt while it is shown.
    public struct Update: Sendable, Equatable {
        /// A message to show in place of the last.
        public var message: String?
        /// How far along, from 0 to 1.
        public var progress: Double?

        /// An update showing `message` and `progress`.
        public init(message: String? = nil, progress: Double? = nil) {
            self.message = message
            self.progress = progress
        }
    }

    /// Who settled a prompt.
    public enum Settler: Sendable, Equatable {
        /// The user, on the host page.
        case page
        /// The host service, through ``HostPrompt/answer(_:)`` or ``HostPrompt/cancel()``.
        case host
        /// Nobody answered in time.
        case expired
        /// The app's call went (its page, or the app, closed).
        case withdrawn
        /// What it asked was settled another way (a launch gate opened through the permissions list, a
        /// decision made in another process).
        case elsewhere
    }

    /// How a prompt was settled.
    public struct Settlement: Sendable, Equatable {
        /// Who settled it.
        public var by: Settler
        /// Whether it was answered (`false`: cancelled, dismissed, expired or withdrawn).
        public var answered: Bool
    }

    private let handler: PromptHandler
    private let state = Mutex<(settlement: Settlement?, waiters: [CheckedContinuation<Settlement, Never>])>((nil, []))

    init(id: Int, appId: String, kind: Kind, handler: PromptHandler) {
        self.id = id
        self.appId = appId
        self.kind = kind
        self.handler = handler
    }

    /// Answers the prompt from code; `false` when it is settled already or `answer` is not of its kind.
    @discardableResult
    public func answer(_ answer: Answer) async -> Bool {
        await handler.answer(self, answer)
    }

    /// Cancels the prompt (a sheet dismissed, permissions left undecided, the gate left closed);
    /// `false` when it is settled already.
    @discardableResult
    public func cancel() -> Bool {
        handler.cancel(self)
    }

    /// Shows `update` on the prompt while it waits (the host page, and every observer, hear of it).
    public func update(_ update: Update) {
        handler.update(self, update)
    }

    /// How the prompt was settled, once it is.
    public func settlement() async -> Settlement {
        await withCheckedContinuation { continuation in
            let settled = state.withLock { state -> Settlement? in
                if let settlement = state.settlement { return settlement }
                state.waiters.append(continuation)
                return nil
            }
            if let settled { continuation.resume(returning: settled) }
        }
    }

    /// Whether it is settled.
    public var isSettled: Bool { state.withLock { $0.settlement != nil } }

    /// Records the settlement (the first only); `false` when it was settled already.
    @discardableResult
    func settled(_ settlement: Settlement) -> Bool {
        let waiters: [CheckedContinuation<Settlement, Never>]? = state.withLock { state in
            guard state.settlement == nil else { return nil }
            state.settlement = settlement
            defer { state.waiters = [] }
            return state.waiters
        }
        guard let waiters else { return false }
        waiters.forEach { $0.resume(returning: settlement) }
        return true
    }
}

/// What carries out a prompt's answers: the host board for permissions and sheets, the browser host for
/// a launch gate.
protocol PromptHandler: Sendable {
    func answer(_ prompt: HostPrompt, _ answer: HostPrompt.Answer) async -> Bool
    func cancel(_ prompt: HostPrompt) -> Bool
    func update(_ prompt: HostPrompt, _ update: HostPrompt.Update)
}
