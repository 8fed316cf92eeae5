import Testing

@testable import MiniAppCore

/// What `stream` yields until it ends.
private func all(_ stream: some AsyncSequence<Int, Never>) async -> [Int] {
    var values: [Int] = []
    for await value in stream { values.append(value) }
    return values
}

struct BroadcastTests {
    @Test func everySubscriberGetsEverythingSentAfterItSubscribedInOrder() async {
        let broadcast = Broadcast<Int>(buffered: 100)
        broadcast.send(0)
        let first = broadcast.subscribe(), second = broadcast.subscribe()
        broadcast.send(1)
        await broadcast.send([2, 3, 4], yieldingEvery: 1)
        broadcast.finish()
        #expect(await all(first) == [1, 2, 3, 4])
        #expect(await all(second) == [1, 2, 3, 4])
    }

    @Test func aWaitingReaderIsWokenBySingleValuesAndBatches() async {
        let broadcast = Broadcast<Int>(buffered: 8)
        let stream = broadcast.subscribe()
        let reader = Task { await all(stream.prefix(5)) }
        // Sent while the reader waits, some of them.
        for value in 1...2 {
            try? await Task.sleep(for: .milliseconds(20))
            broadcast.send(value)
        }
        try? await Task.sleep(for: .milliseconds(20))
        await broadcast.send([3, 4, 5], yieldingEvery: 8)
        #expect(await reader.value == [1, 2, 3, 4, 5])
    }

    @Test func aReaderThatFallsBehindKeepsTheNewestAndSlowsNoOne() async {
        let broadcast = Broadcast<Int>(buffered: 3)
        let slow = broadcast.subscribe(), roomy = broadcast.subscribe(buffered: 1000)
        for value in 1...10 { broadcast.send(value) }
        await broadcast.send(Array(11...20), yieldingEvery: 1)
        broadcast.finish()
        #expect(await all(slow) == [18, 19, 20])
        #expect(await all(roomy) == Array(1...20))
    }

    @Test func droppingAStreamOrCancellingItsReaderUnsubscribes() async {
        let broadcast = Broadcast<Int>(buffered: 8)
        var dropped: AsyncStream<Int>? = broadcast.subscribe()
        #expect(broadcast.count == 1)
        dropped = nil
        #expect(dropped == nil && broadcast.count == 0)

        let stream = broadcast.subscribe()
        let reader = Task {
            var heard: [Int] = []
            for await value in stream { heard.append(value) }
            return heard
        }
        broadcast.send(1)
        try? await Task.sleep(for: .milliseconds(50))
        reader.cancel()
        // The cancelled reader ends without another value.
        #expect(await reader.value == [1])
        #expect(!broadcast.isObserved)
    }

    @Test func aReaderCancelledBeforeItWaitsEndsAtOnce() async {
        let broadcast = Broadcast<Int>(buffered: 8)
        let stream = broadcast.subscribe()
        let reader = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            var iterator = stream.makeAsyncIterator()
            return await iterator.next()
        }
        #expect(await reader.value == nil)
    }
}
