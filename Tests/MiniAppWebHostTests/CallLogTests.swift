import Foundation
import MiniAppCore
import Testing

@testable import MiniAppBridge
@testable import MiniAppWebHost

/// The host page's list of bridge calls: bounded, numbered, waking its long polls, and masking tokens.
@Suite struct CallLogTests {
    func call(_ action: String, _ outcome: BridgeOutcome = .success("ok")) -> BridgeCall {
        BridgeCall(action: action, param: .null, permission: nil, permissionDeclared: true, outcome: outcome, startedAt: Date(), duration: .milliseconds(2))
    }

    @Test func keepsTheNewestCallsInOrder() async {
        let log = CallLog()
        for number in 0..<(CallLog.capacity + 20) { log.append(call("a\(number)")) }
        let (next, calls) = await log.calls(after: 0, wait: .seconds(20))
        #expect(next == CallLog.capacity + 20)
        #expect(calls.count == CallLog.capacity)
        #expect(calls.first?.call.action == "a20" && calls.last?.call.action == "a\(CallLog.capacity + 19)")
        #expect(calls.map(\.sequence) == Array(21...(CallLog.capacity + 20)))
        let (_, after) = await log.calls(after: next - 2, wait: .seconds(20))
        #expect(after.map(\.call.action) == ["a\(CallLog.capacity + 18)", "a\(CallLog.capacity + 19)"])
    }

    @Test func aWaitingPollIsAnsweredByTheNextCall() async {
        let log = CallLog()
        log.append(call("first"))
        // Whether the poll already waits or not, the call appended next is what it gets, well before 600 s.
        let poll = Task { await log.calls(after: 1, wait: .seconds(600)) }
        log.append(call("second"))
        let (next, calls) = await poll.value
        #expect(next == 2 && calls.map(\.call.action) == ["second"])
    }

    @Test func aPollNumberFromAnotherRunStartsOver() async {
        let log = CallLog()
        log.append(call("only"))
        let (next, calls) = await log.calls(after: 99, wait: .seconds(20))
        #expect(next == 1 && calls.map(\.call.action) == ["only"])
    }

    @Test func accessTokensAreMaskedAndErrorsSayWhy() {
        let answer = #"{"token":"very-secret-token","validUntil":1,"scopes":{"audience":"rae","scopes":["openid"]}}"#
        let shown = JSONWriter.text(call("getAccessToken", .success(answer)).panelJSON(sequence: 1))
        #expect(!shown.contains("very-secret-token") && shown.contains("masked"))
        var refused = call("getUserName", .failure(.denied(.userName, declared: false)))
        refused.permission = .userName
        refused.permissionDeclared = false
        guard case .object(let fields) = refused.panelJSON(sequence: 2) else { Issue.record("not an object"); return }
        #expect(fields["outcome"] == .string("error"))
        #expect(fields["refusal"] == .string("the manifest does not declare \(KnownPermission.userName.rawValue) in reqPermissions or optPermissions"))
    }
}
