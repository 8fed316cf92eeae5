import Synchronization

/// The streams of one kind of value that any number of observers read: each gets what is sent after it
/// subscribed, until its stream ends (dropped, or its task done).
///
/// Sending never waits for a reader: each subscriber's stream keeps the newest `buffered` values it has
/// not read yet and drops older ones, so a reader that falls behind (or never reads) loses its oldest
/// values and slows no one, neither the sender nor the other readers.
package final class Broadcast<Element: Sendable>: Sendable {
    private let subscribers = Mutex<[Int: AsyncStream<Element>.Continuation]>([:])
    private let nextSubscriber = Atomic<Int>(0)
    private let buffered: Int

    /// A broadcast whose subscribers each keep at most `buffered` unread values.
    package init(buffered: Int) {
        self.buffered = buffered
    }

    /// A new subscriber's stream, from now on.
    package func subscribe(buffered: Int? = nil) -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream<Element>.makeStream(bufferingPolicy: .bufferingNewest(max(1, buffered ?? self.buffered)))
        let key = nextSubscriber.wrappingAdd(1, ordering: .relaxed).oldValue
        subscribers.withLock { $0[key] = continuation }
        continuation.onTermination = { [weak self] _ in
            _ = self?.subscribers.withLock { $0.removeValue(forKey: key) }
        }
        return stream
    }

    /// Whether anyone listens: a sender skips building what nobody reads.
    package var isObserved: Bool { subscribers.withLock { !$0.isEmpty } }

    /// How many subscribers there are.
    package var count: Int { subscribers.withLock { $0.count } }

    /// Sends `element` to every subscriber.
    package func send(_ element: Element) {
        for continuation in subscribers.withLock({ Array($0.values) }) { continuation.yield(element) }
    }

    /// Ends every subscriber's stream.
    package func finish() {
        for continuation in subscribers.withLock({ subscribers in defer { subscribers = [:] }; return Array(subscribers.values) }) { continuation.finish() }
    }
}
