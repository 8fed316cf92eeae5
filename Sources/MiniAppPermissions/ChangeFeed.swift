import MiniAppCore
import Synchronization

/// The history of a store, told to its observers: one reader, started at the first subscription, reads
/// the rows after the last it told whenever the store may have changed (this process's writes, and the
/// database's own signal of another's: inotify for SQLite, `LISTEN` for PostgreSQL), and broadcasts each
/// row once, in order.
///
/// PostgreSQL numbers a row when it is written, not when its transaction commits: a row may show up after
/// a later-numbered one. The reader looks again at the last ``window`` ids each time, and tells each id
/// once.
final class ChangeFeed: Sendable {
    private struct State {
        var reader: Task<Void, Never>?
        var watch: (any ChangeWatch)?
        var pokes: AsyncStream<Void>.Continuation?
        /// Rows below this id are all told.
        var floor: Int64 = 0
        /// The newest row told.
        var highest: Int64 = 0
        /// The ids at or above ``floor`` already told.
        var told: Set<Int64> = []
        var stopped = false
    }

    private let backend: any PermissionBackend
    private let writer: String
    private let broadcast = Broadcast<PermissionDecisionEvent>(buffered: 256)
    private let state = Mutex(State())
    /// How many ids behind the newest the reader looks again for rows committed late.
    static let window: Int64 = 1024
    /// Rows read at once.
    static let batch = 500

    init(backend: any PermissionBackend, writer: String) {
        self.backend = backend
        self.writer = writer
    }

    /// A stream of the changes from now on; the first subscription starts the reader once the history's
    /// last row is known (what is before it is not told).
    func subscribe(buffered: Int) async throws -> AsyncStream<PermissionDecisionEvent> {
        let stream = broadcast.subscribe(buffered: buffered)
        let starting = state.withLock { state -> Bool in
            guard state.reader == nil, !state.stopped else { return false }
            state.reader = Task {}
            return true
        }
        guard starting else { return stream }
        let last: Int64
        do {
            last = try await backend.lastChangeID()
        } catch {
            state.withLock { $0.reader = nil }
            throw error
        }
        let (pokes, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let watch = await backend.watchChanges { continuation.yield(()) }
        let reader = Task { [self] in
            for await _ in pokes {
                await readNew()
            }
        }
        let stopped = state.withLock { state in
            state.floor = last + 1
            state.highest = last
            state.pokes = continuation
            state.watch = watch
            state.reader = reader
            return state.stopped
        }
        if stopped { stop() }
        // A write made while the reader started is read now.
        continuation.yield(())
        return stream
    }

    /// The store may have changed: the reader looks (at once if it is idle, else once more after).
    func poke() {
        state.withLock { $0.pokes }?.yield(())
    }

    func stop() {
        let (reader, watch, pokes) = state.withLock { state in
            state.stopped = true
            defer { state.reader = nil; state.watch = nil; state.pokes = nil }
            return (state.reader, state.watch, state.pokes)
        }
        pokes?.finish()
        watch?.stop()
        reader?.cancel()
        broadcast.finish()
    }

    /// Reads and tells every row not told yet: the window behind the newest told (rows committed late)
    /// and a batch beyond it, again until none is left.
    private func readNew() async {
        while !Task.isCancelled {
            let (floor, highest) = state.withLock { ($0.floor, $0.highest) }
            let limit = Int(max(0, highest - floor + 1)) + Self.batch
            let rows: [StoredChange]
            do {
                rows = try await backend.changes(after: floor - 1, limit: limit)
            } catch {
                // The next poke (or write) reads again.
                return
            }
            let fresh: [StoredChange] = state.withLock { state in
                let fresh = rows.filter { !state.told.contains($0.id) }
                state.told.formUnion(fresh.map(\.id))
                state.highest = max(state.highest, rows.last?.id ?? state.highest)
                let moved = max(state.floor, state.highest - Self.window)
                if moved > state.floor {
                    state.floor = moved
                    state.told = state.told.filter { $0 >= moved }
                }
                return fresh
            }
            for row in fresh {
                broadcast.send(PermissionDecisionEvent(
                    appId: row.appId, change: row.change, source: row.source.flatMap(PermissionDecisionSource.init(rawValue:)) ?? .unknown,
                    writtenHere: row.writer == writer
                ))
            }
            if rows.count < limit { return }
        }
    }
}
