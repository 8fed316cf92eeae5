package import Synchronization

/// The streams of one kind of value that any number of observers read: each gets what is sent after it
/// subscribed, until its stream ends (dropped, or its task done).
///
/// Sending never waits for a reader: each subscriber's stream keeps the newest `buffered` values it has
/// not read yet and drops older ones, so a reader that falls behind (or never reads) loses its oldest
/// values and slows no one, neither the sender nor the other readers.
///
/// Each subscriber has a mailbox of its own rather than an `AsyncStream` continuation: a read of a
/// buffered value takes a lock and returns without suspending, and a batch sent at once wakes a waiting
/// reader once. An `AsyncStream`'s continuation suspends and resumes its reader for every value, several
/// microseconds of a pool thread each: a hundred observers of every bridge call paid that a hundred
/// times per call (`Benchmarks/observers`). Its parts are inlinable, so the module that sends a type
/// specializes them for it: unspecialized, every read looked up generic metadata.
package final class Broadcast<Element: Sendable>: Sendable {
    package let subscribers = Mutex<[Int: Mailbox<Element>]>([:])
    package let nextSubscriber = Atomic<Int>(0)
    package let buffered: Int

    /// A broadcast whose subscribers each keep at most `buffered` unread values.
    @inlinable package init(buffered: Int) {
        self.buffered = buffered
    }

    /// A new subscriber's stream, from now on.
    @inlinable package func subscribe(buffered: Int? = nil) -> AsyncStream<Element> {
        let key = nextSubscriber.wrappingAdd(1, ordering: .relaxed).oldValue
        let mailbox = Mailbox<Element>(limit: max(1, buffered ?? self.buffered))
        subscribers.withLock { $0[key] = mailbox }
        // Whoever holds the stream holds the lease; dropping the stream (or its task's cancellation,
        // which drops the read) ends the subscription.
        let lease = Lease { [weak self] in
            _ = self?.subscribers.withLock { $0.removeValue(forKey: key) }
        }
        return AsyncStream(unfolding: {
            withExtendedLifetime(lease) {}
            return await mailbox.next()
        }, onCancel: { mailbox.cancel() })
    }

    /// Whether anyone listens: a sender skips building what nobody reads.
    @inlinable package var isObserved: Bool { subscribers.withLock { !$0.isEmpty } }

    /// How many subscribers there are.
    @inlinable package var count: Int { subscribers.withLock { $0.count } }

    /// Sends `element` to every subscriber.
    @inlinable package func send(_ element: Element) {
        for mailbox in subscribers.withLock({ Array($0.values) }) { mailbox.deliver(CollectionOfOne(element)) }
    }

    /// Sends every element of `batch`, in order, to each subscriber in turn, yielding to other tasks after
    /// each `group` of subscribers, and pausing for `pause` after each `slice` of them when given: a
    /// subscriber is woken once for the whole batch, and a task that waits for a thread (a call of an
    /// app's) never waits behind the wake-ups of all the subscribers at once, nor behind the woken
    /// subscribers' own reads, which a pause spreads out.
    @inlinable package func send(_ batch: [Element], yieldingEvery group: Int, pausing pause: (slice: Int, for: Duration)? = nil) async {
        guard !batch.isEmpty else { return }
        let mailboxes = subscribers.withLock { Array($0.values) }
        for (index, mailbox) in mailboxes.enumerated() {
            mailbox.deliver(batch)
            if let pause, (index + 1) % max(1, pause.slice) == 0, index + 1 < mailboxes.count {
                try? await Task.sleep(for: pause.for)
            } else if (index + 1) % max(1, group) == 0 {
                await Task.yield()
            }
        }
    }

    /// Ends every subscriber's stream, once each has read what it holds.
    @inlinable package func finish() {
        for mailbox in subscribers.withLock({ subscribers in defer { subscribers = [:] }; return Array(subscribers.values) }) { mailbox.finish() }
    }
}

/// Runs its closure once, when the last reference goes.
package final class Lease: Sendable {
    package let end: @Sendable () -> Void

    @inlinable package init(_ end: @escaping @Sendable () -> Void) {
        self.end = end
    }

    deinit { end() }
}

/// One subscriber's unread values, and the read waiting for the next, if any.
package final class Mailbox<Element: Sendable>: Sendable {
    package struct State {
        /// The unread values: those from `head` on.
        package var values: [Element] = []
        package var head = 0
        package var reader: UnsafeContinuation<Element?, Never>?
        /// The sender is done: the values left are read, then the stream ends.
        package var finished = false
        /// The reader is done: the stream ends now.
        package var cancelled = false

        @inlinable package var unread: Int { values.count - head }

        @inlinable package init() {}

        @inlinable package mutating func pop() -> Element? {
            guard head < values.count else { return nil }
            let value = values[head]
            head += 1
            if head == values.count {
                values.removeAll(keepingCapacity: true)
                head = 0
            }
            return value
        }
    }

    package let state = Mutex(State())
    package let limit: Int

    @inlinable package init(limit: Int) {
        self.limit = limit
    }

    /// Queues `batch`, dropping the oldest unread values beyond the limit; a waiting read gets the first.
    @inlinable package func deliver<Values: Collection<Element>>(_ batch: Values) {
        let (reader, value) = state.withLock { state -> (UnsafeContinuation<Element?, Never>?, Element?) in
            guard !batch.isEmpty, !state.finished, !state.cancelled else { return (nil, nil) }
            state.values.append(contentsOf: batch)
            let excess = state.unread - limit
            if excess > 0 { state.head += excess }
            if state.head > limit {
                state.values.removeFirst(state.head)
                state.head = 0
            }
            guard let reader = state.reader else { return (nil, nil) }
            state.reader = nil
            return (reader, state.pop())
        }
        reader?.resume(returning: value)
    }

    /// The next value: at once when one is unread, else once one is sent; nil once the stream ended.
    @inlinable package func next() async -> Element? {
        if let ready = state.withLock({ state -> Element?? in
            if state.cancelled { return .some(nil) }
            if let value = state.pop() { return value }
            return state.finished ? .some(nil) : nil
        }) {
            return ready
        }
        return await withTaskCancellationHandler {
            await withUnsafeContinuation { (reader: UnsafeContinuation<Element?, Never>) in
                let ready = state.withLock { state -> Element?? in
                    if state.cancelled { return .some(nil) }
                    if let value = state.pop() { return value }
                    if state.finished { return .some(nil) }
                    state.reader = reader
                    return nil
                }
                if let ready { reader.resume(returning: ready) }
            }
        } onCancel: {
            cancel()
        }
    }

    @inlinable package func finish() {
        state.withLock { state in
            state.finished = true
            defer { state.reader = nil }
            return state.reader
        }?.resume(returning: nil)
    }

    @inlinable package func cancel() {
        state.withLock { state in
            state.cancelled = true
            state.values = []
            state.head = 0
            defer { state.reader = nil }
            return state.reader
        }?.resume(returning: nil)
    }
}
