import Foundation
import MiniAppBridge
import MiniAppCore
import Synchronization

/// What the host page's panel keeps of one app: its latest bridge calls, the faults its developer
/// forces on its actions, and what the app told the host.
final class AppPanel: Sendable {
    let calls = CallLog()
    let faults = BridgeFaults()
    let signals = HostSignals()
}

/// The latest bridge calls of one app, numbered, in a ring of the newest ``capacity``: the bridge's
/// calls stream hands each here off the call's path, and the host page's long polls wait for the next.
final class CallLog: Sendable {
    /// How many calls are kept.
    static let capacity = 500

    private struct State {
        /// The ring: once full, `oldest` is the slot the next call replaces.
        var ring: [(sequence: Int, call: BridgeCall)] = []
        var oldest = 0
        var sequence = 0

        /// The kept calls after `sequence`, oldest first.
        func calls(after sequence: Int) -> [(sequence: Int, call: BridgeCall)] {
            let ordered = ring.count < CallLog.capacity ? ring : Array(ring[oldest...] + ring[..<oldest])
            return ordered.filter { $0.sequence > sequence }
        }
    }

    private let state = Mutex(State())
    private let changes = ChangeSignal()

    func append(_ call: BridgeCall) {
        state.withLock { state in
            state.sequence += 1
            if state.ring.count < Self.capacity {
                state.ring.append((state.sequence, call))
            } else {
                state.ring[state.oldest] = (state.sequence, call)
                state.oldest = (state.oldest + 1) % Self.capacity
            }
        }
        changes.signal()
    }

    /// The kept calls after `sequence` (0: every kept call), oldest first, and the number to go on
    /// from; when there is none yet, waits up to `wait` for the next call to be recorded.
    func calls(after sequence: Int, wait: Duration) async -> (next: Int, calls: [(sequence: Int, call: BridgeCall)]) {
        let generation = changes.generation
        let found: (next: Int, calls: [(sequence: Int, call: BridgeCall)]) = state.withLock { state in
            // A number from before the host started again names no call of this log: start over.
            let after = sequence > state.sequence ? 0 : sequence
            return (state.sequence, state.calls(after: after))
        }
        if !found.calls.isEmpty { return found }
        await changes.wait(after: generation, for: wait)
        return state.withLock { state in (state.sequence, state.calls(after: found.next)) }
    }
}

extension BridgeCall {
    /// The longest parameters or answer the panel shows of a call, in characters: an app's message
    /// may be megabytes.
    static let shownCharacters = 4096

    /// The call as the host page's panel shows it. An access token in an answer is masked: the page
    /// may be shared on a screen or in a screenshot.
    func panelJSON(sequence: Int) -> JSONValue {
        var fields: [String: JSONValue] = [
            "sequence": .number(Double(sequence)), "action": .string(action),
            "time": .number((startedAt.timeIntervalSince1970 * 1000).rounded()),
            "milliseconds": .number(Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15),
            "param": .string(Self.shortened(JSONWriter.text(param))),
            "permission": permission.map { .string($0.rawValue) } ?? .null, "permissionDeclared": .bool(permissionDeclared),
        ]
        switch outcome {
        case .success(let answer):
            fields["outcome"] = .string("success")
            fields["answer"] = answer.map { .string(Self.shortened(masked(answer: $0))) } ?? .null
        case .failure(let failure):
            fields["outcome"] = .string("error")
            fields["error"] = .object(["type": .string(failure.type), "message": .string(Self.shortened(failure.message))])
            if let permission, failure.type == "userDenied" {
                fields["refusal"] = .string(permissionDeclared
                    ? "\(permission.rawValue) is not allowed for this app (the permissions panel, or the app's own request, decides it)"
                    : "the manifest does not declare \(permission.rawValue) in reqPermissions or optPermissions")
            }
        }
        return .object(fields)
    }

    /// `answer` with the token of an access-token answer masked.
    private func masked(answer: String) -> String {
        guard action == "getAccessToken" || action == "getExchangeToken",
              case .object(var fields)? = JSONReader.value(Array(answer.utf8), maxDepth: 8), case .string(let token)? = fields["token"] else { return answer }
        fields["token"] = .string(String(repeating: "•", count: min(token.count, 8)) + " (\(token.count) characters, masked)")
        return JSONWriter.text(.object(fields))
    }

    private static func shortened(_ text: String) -> String {
        text.count <= shownCharacters ? text : text.prefix(shownCharacters) + "… (\(text.count) characters)"
    }
}

/// What an app told its host that the host page shows, kept for a page that opens later: its
/// authentication, whether it is ready for notifications (and those held back until it is), whether it
/// overrides Back, is maximized, finished loading, and the user's data it holds.
final class HostSignals: Sendable {
    struct State: Sendable {
        var authenticated: Bool?
        var notificationsReady = false
        var backOverride = false
        var maximized = false
        var pageLoaded = false
        /// The user's data the app's page holds (Forem's `body`); `.some(nil)` once read and empty.
        var userData: String??
        var held: [JSONValue] = []
        var notifications = 0
    }

    private let state = Mutex(State())
    /// Notifications held at once, beyond which the oldest goes.
    static let maxHeld = 64

    var snapshot: State { state.withLock { $0 } }

    func update(_ change: (inout State) -> Void) { state.withLock { change(&$0) } }

    /// A notification for the app: shown now when the app is ready for notifications (returned), else
    /// held until it is.
    func post(title: String, body: String) -> JSONValue? {
        state.withLock { state in
            state.notifications += 1
            let notification: JSONValue = .object(["id": .number(Double(state.notifications)), "title": .string(title), "body": .string(body)])
            guard state.notificationsReady else {
                state.held.append(notification)
                if state.held.count > Self.maxHeld { state.held.removeFirst(state.held.count - Self.maxHeld) }
                return nil
            }
            return notification
        }
    }

    /// Sets whether the app is ready for notifications; the notifications held until now when it is.
    func setReady(_ ready: Bool) -> [JSONValue] {
        state.withLock { state in
            state.notificationsReady = ready
            guard ready else { return [] }
            defer { state.held = [] }
            return state.held
        }
    }

    /// What the host page reads of them.
    var json: JSONValue {
        let now = snapshot
        var fields: [String: JSONValue] = [
            "notificationsReady": .bool(now.notificationsReady), "backOverride": .bool(now.backOverride), "maximized": .bool(now.maximized),
            "pageLoaded": .bool(now.pageLoaded), "heldNotifications": .number(Double(now.held.count)),
            "authenticated": now.authenticated.map { .bool($0) } ?? .null,
        ]
        if case .some(let data) = now.userData { fields["userData"] = data.map { .string($0) } ?? .null }
        return .object(fields)
    }
}

/// Images the host's upload took (Forem's `imageUpload`), served at `/uploads/<token>` of the host page's
/// origin: the link the app receives. The newest ``maxKept`` are kept, in memory.
final class UploadStore: Sendable {
    private let uploads = Mutex<[(token: String, type: String, bytes: [UInt8])]>([])
    static let maxKept = 32

    /// Keeps `bytes` of image type `type`; answers the token that names it.
    func keep(_ bytes: [UInt8], type: String) -> String {
        var generator = SystemRandomNumberGenerator()
        let token = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }.hexString
        uploads.withLock { uploads in
            uploads.append((token, type, bytes))
            if uploads.count > Self.maxKept { uploads.removeFirst(uploads.count - Self.maxKept) }
        }
        return token
    }

    /// The image `token` names.
    func image(_ token: String) -> (type: String, bytes: [UInt8])? {
        uploads.withLock { uploads in uploads.first { $0.token == token }.map { ($0.type, $0.bytes) } }
    }
}
