import Foundation
import MiniAppBridge
import MiniAppCore
import Testing

@testable import MiniAppWebHost

/// The host page's long polls wait on a signal, not on a sleep: they wake at the next change, at once
/// when a change came between their look and their wait, when their time is up, or when their request goes.
@Suite struct ChangeSignalTests {
    @Test func aWaitEndsAtTheNextSignal() async {
        let signal = ChangeSignal()
        let generation = signal.generation
        // Whether the wait is registered yet or not, the signal ends it, well before 600 s.
        let waiting = Task { await signal.wait(after: generation, for: .seconds(600)) }
        signal.signal()
        await waiting.value
        #expect(signal.generation == generation + 1)
    }

    @Test func aSignalBetweenTheLookAndTheWaitIsNotMissed() async {
        let signal = ChangeSignal()
        let generation = signal.generation
        signal.signal()
        await signal.wait(after: generation, for: .seconds(600))
    }

    @Test func aWaitEndsWhenItsTimeIsUpOrItsTaskIsCancelled() async {
        let signal = ChangeSignal()
        await signal.wait(after: signal.generation, for: .milliseconds(1))
        let waiting = Task { await signal.wait(after: signal.generation, for: .seconds(600)) }
        waiting.cancel()
        await waiting.value
    }

    @Test func waitsLeaveNothingBehindHoweverTheyEnd() async {
        let signal = ChangeSignal()
        for round in 0..<200 {
            let generation = signal.generation
            let waiting = Task { await signal.wait(after: generation, for: .milliseconds(round % 3 == 0 ? 1 : 600_000)) }
            if round % 3 == 1 { signal.signal() } else if round % 3 == 2 { waiting.cancel() }
            await waiting.value
        }
        // A wait's timer that was already past its sleep when the wait ended must not leave its mark.
        try? await Task.sleep(for: .milliseconds(20))
        #expect(signal.heldWaits == 0)
    }

    @Test func theHostPagesNoticesAndAnAppsEventsWakeTheirPolls() async {
        let board = HostBoard()
        let (start, _) = await board.notices(after: 0, wait: .seconds(1))
        let notices = Task { await board.notices(after: start, wait: .seconds(600)) }
        board.close(appId: "shop")
        let (next, found) = await notices.value
        #expect(next == start + 1 && found.count == 1)

        let log = EventLog()
        let events = Task { await log.events(after: 1, wait: .seconds(600)) }
        log.append(BridgeEvent(name: "ping", message: "hello"))
        #expect(await events.value.events.count == 1)
    }
}
