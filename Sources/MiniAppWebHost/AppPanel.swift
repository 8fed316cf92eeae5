import Foundation
import MiniAppBridge
import MiniAppCore
import Synchronization

/// What the host page's panel keeps of one app: its latest bridge calls, and the faults its developer
/// forces on its actions.
final class AppPanel: Sendable {
    let calls = CallLog()
    let faults = BridgeFaults()
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
            "param": .string(Self.shortened(JSONText.encode(param))),
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
        return JSONText.encode(.object(fields))
    }

    private static func shortened(_ text: String) -> String {
        text.count <= shownCharacters ? text : text.prefix(shownCharacters) + "… (\(text.count) characters)"
    }
}
