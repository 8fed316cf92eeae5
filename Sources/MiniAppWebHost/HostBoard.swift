import Foundation
import MiniAppBridge
import MiniAppCore
import MiniAppKit
import Synchronization

/// Something the host shows the user for an app and waits on: a share sheet, an ad, a purchase, a
/// login, a picker. `kind` names it to the host page; `payload` is what the page shows.
struct HostSheet: Sendable {
    let appId: String
    let kind: String
    let payload: JSONValue
}

/// What the host page learns from the server: prompts and sheets to show, prompts and sheets settled
/// elsewhere, apps that asked to close, and what apps told the host.
struct HostNotice: Sendable {
    enum Kind: Sendable {
        case prompt(id: Int, PermissionPrompt)
        case sheet(id: Int, HostSheet)
        case settled(id: Int)
        case closed(appId: String)
        /// Something an app did that the host shows without waiting (a link opened, a notification).
        case info(appId: String, kind: String, payload: JSONValue)
        /// A development folder's app changed: `reload` (its files: the page reloads its frame), or
        /// `warning` (a new warning about its calls); or any app's `state` changed elsewhere than in the
        /// page's own lists (a permission reset from the panel): the page reads the app's state again.
        case development(appId: String, change: String)
        /// A prompt or sheet waiting was updated: what it shows now.
        case updated(id: Int, HostPrompt.Update)
    }

    let sequence: Int
    let kind: Kind

    var json: JSONValue {
        switch kind {
        case .prompt(let id, let prompt):
            return .object([
                "kind": .string("prompt"), "id": .number(Double(id)), "appId": .string(prompt.appId),
                "items": .array(prompt.items.map { item in
                    .object(["name": .string(item.name), "reason": item.reason.map { .string($0) } ?? .null, "required": .bool(item.required)])
                }),
            ])
        case .sheet(let id, let sheet):
            return .object(["kind": .string("sheet"), "id": .number(Double(id)), "appId": .string(sheet.appId), "sheet": .string(sheet.kind), "payload": sheet.payload])
        case .settled(let id): return .object(["kind": .string("settled"), "id": .number(Double(id))])
        case .closed(let appId): return .object(["kind": .string("closed"), "appId": .string(appId)])
        case .info(let appId, let kind, let payload):
            return .object(["kind": .string("info"), "appId": .string(appId), "info": .string(kind), "payload": payload])
        case .development(let appId, let change):
            return .object(["kind": .string("development"), "appId": .string(appId), "change": .string(change)])
        case .updated(let id, let update):
            return .object([
                "kind": .string("updated"), "id": .number(Double(id)), "message": update.message.map { .string($0) } ?? .null,
                "progress": update.progress.map { .number($0) } ?? .null,
            ])
        }
    }
}

/// The host's side of the user interface: the sessions of host pages (each with its secret), the
/// prompts waiting for the user, and the notices host pages poll for.
final class HostBoard: Sendable {
    /// A prompt waiting for the user, with the notice that showed it: a page that opens later, or
    /// that polls after more notices came than are kept, is shown it again from here.
    private struct Pending {
        let prompt: PermissionPrompt
        let continuation: CheckedContinuation<[String: PermissionStatus], Never>
        let notice: HostNotice
        let handle: HostPrompt
        var update: HostNotice?
    }

    private struct PendingSheet {
        let sheet: HostSheet
        let continuation: CheckedContinuation<JSONValue?, Never>
        let notice: HostNotice
        let handle: HostPrompt
        var update: HostNotice?
    }

    private struct State {
        var secrets: [String] = []
        var notices: [HostNotice] = []
        /// The last notice's number; 1 before any, so that a page's next poll never asks for "after 0".
        var sequence = 1
        /// The last prompt's or sheet's number: they share one count, so that an id names one of them.
        var nextPrompt = 0
        var pending: [Int: Pending] = [:]
        var sheets: [Int: PendingSheet] = [:]
        /// Closed launch gates waiting for a decision, by app id.
        var gates: [String: HostPrompt] = [:]

        func waiting(for appId: String) -> Int {
            pending.values.filter { $0.prompt.appId == appId }.count + sheets.values.filter { $0.sheet.appId == appId }.count
        }

        /// The notices of the prompts and sheets still waiting (each with its last update), oldest first.
        var waitingNotices: [HostNotice] {
            var notices: [HostNotice] = []
            for waiting in pending.values {
                notices.append(waiting.notice)
                if let update = waiting.update { notices.append(update) }
            }
            for waiting in sheets.values {
                notices.append(waiting.notice)
                if let update = waiting.update { notices.append(update) }
            }
            return notices.sorted { $0.sequence < $1.sequence }
        }
    }

    private let state = Mutex(State())
    private let changes = ChangeSignal()
    /// Where the host's observers hear of prompts.
    let hub: CallbackHub
    /// Writes a launch gate's answer from code into the store: the app, the missing permissions, allowed or not.
    let gateDecider = Mutex<(@Sendable (String, [String], Bool) async -> Bool)?>(nil)

    init(hub: CallbackHub = CallbackHub()) {
        self.hub = hub
    }
    /// Whether the user logged in or out on the host page, over the profile's `loggedIn`: the host's
    /// user is one for every app.
    let loggedIn = Mutex<Bool?>(nil)
    /// Whether the host page's browser is online, as the page last said.
    let online = Mutex<Bool?>(nil)
    /// One-time tokens that let the host page clear an app's site data, by token: the app's id.
    private let clearTokens = Mutex<[String: String]>([:])
    /// Prompts waiting at once per app, beyond which an app's request is refused.
    static let maxPendingPerApp = 4
    /// How long a prompt waits for the user.
    static let promptLifetime = Duration.seconds(600)
    private static let maxSessions = 256
    private static let maxNotices = 256

    /// A new host-page session: its secret, which only that page holds.
    func openSession() -> String {
        var generator = SystemRandomNumberGenerator()
        let secret = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }.hexString
        state.withLock { state in
            state.secrets.append(secret)
            if state.secrets.count > Self.maxSessions { state.secrets.removeFirst(state.secrets.count - Self.maxSessions) }
        }
        return secret
    }

    /// Whether `secret` is a live session's, compared in constant time.
    func isSession(_ secret: String?) -> Bool {
        guard let secret, secret.utf8.count == 64 else { return false }
        let given = Array(secret.utf8)
        return state.withLock { state in
            state.secrets.contains { known in
                zip(Array(known.utf8), given).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
            }
        }
    }

    /// Shows `prompt` to the host pages and waits for the user's decisions; a cancelled wait (the app's
    /// request went away) settles the prompt with no decision.
    func ask(_ prompt: PermissionPrompt) async throws(BridgeFailure) -> [String: PermissionStatus] {
        let id: Int? = state.withLock { state in
            guard state.waiting(for: prompt.appId) < Self.maxPendingPerApp else { return nil }
            state.nextPrompt += 1
            return state.nextPrompt
        }
        guard let id else {
            throw BridgeFailure(type: "PermissionRequestBusyError", message: "\(Self.maxPendingPerApp) permission requests are already waiting for the user")
        }
        // A prompt nobody answers is settled with no decision after a while: the app's call gets its
        // answer (every undecided permission DENIED, nothing stored), and the prompt leaves the page.
        let expiry = Task { [weak self] in
            try? await Task.sleep(for: Self.promptLifetime)
            self?.settle(id, with: [:], by: .expired)
        }
        defer { expiry.cancel() }
        let handle = HostPrompt(id: id, appId: prompt.appId, kind: .permissions(prompt.items), handler: self)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                state.withLock { state in
                    state.pending[id] = Pending(prompt: prompt, continuation: continuation, notice: post(.prompt(id: id, prompt), in: &state), handle: handle)
                }
                hub.send(.prompt(handle))
                if Task.isCancelled { _ = settle(id, with: [:], by: .withdrawn) }
            }
        } onCancel: {
            _ = settle(id, with: [:], by: .withdrawn)
        }
    }

    /// Settles prompt `id` with `decisions` (names it does not ask are ignored); `false` when it is not waiting.
    @discardableResult
    func settle(_ id: Int, with decisions: [String: PermissionStatus], by settler: HostPrompt.Settler = .page) -> Bool {
        let pending: Pending? = state.withLock { state in
            guard let pending = state.pending.removeValue(forKey: id) else { return nil }
            post(.settled(id: id), in: &state)
            return pending
        }
        guard let pending else { return false }
        let asked = Set(pending.prompt.items.map(\.name))
        pending.continuation.resume(returning: decisions.filter { asked.contains($0.key) })
        told(pending.handle, HostPrompt.Settlement(by: settler, answered: settler == .page || settler == .host ? !decisions.isEmpty : false))
        return true
    }

    /// Tells the prompt and the observers how it was settled.
    private func told(_ handle: HostPrompt, _ settlement: HostPrompt.Settlement) {
        if handle.settled(settlement) { hub.send(.promptSettled(handle, settlement)) }
    }

    /// Shows `sheet` to the host pages and waits for the user's answer: `nil` when the user dismissed
    /// it, when nobody answered it in ``promptLifetime``, or when the wait was cancelled (the app's
    /// request went away).
    func show(_ sheet: HostSheet) async throws(BridgeFailure) -> JSONValue? {
        let id: Int? = state.withLock { state in
            guard state.waiting(for: sheet.appId) < Self.maxPendingPerApp else { return nil }
            state.nextPrompt += 1
            return state.nextPrompt
        }
        guard let id else {
            throw BridgeFailure(type: "MiniAppError", message: "\(Self.maxPendingPerApp) requests are already waiting for the user")
        }
        let expiry = Task { [weak self] in
            try? await Task.sleep(for: Self.promptLifetime)
            self?.answer(id, with: nil, by: .expired)
        }
        defer { expiry.cancel() }
        let handle = HostPrompt(id: id, appId: sheet.appId, kind: .sheet(sheet.kind, payload: sheet.payload), handler: self)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                state.withLock { state in
                    state.sheets[id] = PendingSheet(sheet: sheet, continuation: continuation, notice: post(.sheet(id: id, sheet), in: &state), handle: handle)
                }
                hub.send(.prompt(handle))
                if Task.isCancelled { _ = answer(id, with: nil, by: .withdrawn) }
            }
        } onCancel: {
            _ = answer(id, with: nil, by: .withdrawn)
        }
    }

    /// Answers sheet `id` with `value` (nil: dismissed); `false` when it is not waiting.
    @discardableResult
    func answer(_ id: Int, with value: JSONValue?, by settler: HostPrompt.Settler = .page) -> Bool {
        let pending: PendingSheet? = state.withLock { state in
            guard let pending = state.sheets.removeValue(forKey: id) else { return nil }
            post(.settled(id: id), in: &state)
            return pending
        }
        guard let pending else { return false }
        pending.continuation.resume(returning: value)
        told(pending.handle, HostPrompt.Settlement(by: settler, answered: value != nil && (settler == .page || settler == .host)))
        return true
    }

    /// Shows `update` on prompt or sheet `id` while it waits; `false` when it is not waiting.
    @discardableResult
    func update(_ id: Int, _ update: HostPrompt.Update) -> Bool {
        let handle: HostPrompt? = state.withLock { state in
            if state.pending[id] != nil {
                let notice = post(.updated(id: id, update), in: &state)
                state.pending[id]?.update = notice
                return state.pending[id]?.handle
            }
            if state.sheets[id] != nil {
                let notice = post(.updated(id: id, update), in: &state)
                state.sheets[id]?.update = notice
                return state.sheets[id]?.handle
            }
            return nil
        }
        guard let handle else { return false }
        hub.send(.promptUpdated(handle, update))
        return true
    }

    // MARK: Launch gates

    /// Raises the closed launch gate of `appId` (missing `missing`) as a prompt for the host's observers,
    /// unless one waits already for the same permissions; the host page shows its own gate from the
    /// app's state.
    func raiseGate(appId: String, missing: [String]) {
        let (raised, replaced): (HostPrompt?, HostPrompt?) = state.withLock { state in
            if let waiting = state.gates[appId], case .launchGate(let asked) = waiting.kind, asked == missing { return (nil, nil) }
            state.nextPrompt += 1
            let handle = HostPrompt(id: state.nextPrompt, appId: appId, kind: .launchGate(missing: missing), handler: self)
            let replaced = state.gates.updateValue(handle, forKey: appId)
            return (handle, replaced)
        }
        if let replaced { told(replaced, HostPrompt.Settlement(by: .elsewhere, answered: false)) }
        if let raised { hub.send(.prompt(raised)) }
    }

    /// Settles the launch gate prompt of `appId`, if one waits.
    func settleGate(appId: String, by settler: HostPrompt.Settler, answered: Bool) {
        guard let handle = state.withLock({ $0.gates.removeValue(forKey: appId) }) else { return }
        told(handle, HostPrompt.Settlement(by: settler, answered: answered))
    }

    /// The kind of sheet `id` while it waits.
    func sheetKind(_ id: Int) -> String? {
        state.withLock { $0.sheets[id]?.sheet.kind }
    }

    /// Tells the host pages what an app did, without waiting for anyone.
    func inform(appId: String, kind: String, payload: JSONValue) {
        post(.info(appId: appId, kind: kind, payload: payload))
    }

    /// Tells the host pages that a development folder's app changed (`reload` or `warning`).
    func notifyDevelopment(appId: String, kind: String) {
        post(.development(appId: appId, change: kind))
    }

    /// Tells the host pages that an app's permissions changed from the panel: they read its state again.
    func notifyStateChanged(appId: String) {
        post(.development(appId: appId, change: "state"))
    }

    /// A token that lets the host page clear the site data of app `appId` once (its `clearall`).
    func clearToken(appId: String) -> String {
        var generator = SystemRandomNumberGenerator()
        let token = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }.hexString
        clearTokens.withLock { tokens in
            if tokens.count >= 64 { tokens.removeAll() }
            tokens[token] = appId
        }
        return token
    }

    /// Takes the clearing token `token` of app `appId`: `true` once.
    func takeClearToken(_ token: String, appId: String) -> Bool {
        clearTokens.withLock { tokens in
            guard tokens[token] == appId else { return false }
            tokens.removeValue(forKey: token)
            return true
        }
    }

    /// The app asks to be closed.
    func close(appId: String) {
        post(.closed(appId: appId))
        hub.send(.appClosed(appId: appId, .byApp))
    }

    /// The notices after `sequence`, waiting up to `wait` for one. A page that just opened (`sequence`
    /// 0) gets at once the prompts and sheets still waiting and the sequence to go on from. A page whose
    /// `sequence` is older than the notices kept also gets the waiting ones it would have missed: no app
    /// can hide another's prompt from the user by posting notices of its own.
    func notices(after sequence: Int, wait: Duration) async -> (next: Int, notices: [HostNotice]) {
        if sequence == 0 {
            return state.withLock { state in (state.sequence, state.waitingNotices) }
        }
        let deadline = ContinuousClock.now + wait
        while true {
            let generation = changes.generation
            let found = state.withLock { state in
                let kept = state.notices.filter { $0.sequence > sequence }
                let firstKept = state.notices.first?.sequence ?? state.sequence + 1
                guard firstKept > sequence + 1 else { return (state.sequence, kept) }
                let dropped = state.waitingNotices.filter { $0.sequence > sequence && $0.sequence < firstKept }
                return (state.sequence, dropped + kept)
            }
            if !found.1.isEmpty || ContinuousClock.now >= deadline || Task.isCancelled { return found }
            await changes.wait(after: generation, for: deadline - ContinuousClock.now)
        }
    }

    /// Adds a notice that nothing waits on.
    private func post(_ kind: HostNotice.Kind) {
        state.withLock { _ = post(kind, in: &$0) }
    }

    /// Adds a notice (under the state's lock) and wakes the pages' polls.
    @discardableResult
    private func post(_ kind: HostNotice.Kind, in state: inout State) -> HostNotice {
        state.sequence += 1
        let notice = HostNotice(sequence: state.sequence, kind: kind)
        state.notices.append(notice)
        if state.notices.count > Self.maxNotices { state.notices.removeFirst(state.notices.count - Self.maxNotices) }
        changes.signal()
        return notice
    }
}

/// The events a host sends one app, kept for the app's pages to poll.
final class EventLog: Sendable {
    private let state = Mutex<(sequence: Int, events: [(Int, BridgeEvent)])>((1, []))
    private let changes = ChangeSignal()
    private static let kept = 64

    func append(_ event: BridgeEvent) {
        state.withLock { state in
            state.sequence += 1
            state.events.append((state.sequence, event))
            if state.events.count > Self.kept { state.events.removeFirst(state.events.count - Self.kept) }
        }
        changes.signal()
    }

    /// The events after `sequence` (a page that just loaded passes 0 and gets only what comes next),
    /// waiting up to `wait` for one.
    func events(after sequence: Int, wait: Duration) async -> (next: Int, events: [BridgeEvent]) {
        let deadline = ContinuousClock.now + wait
        let start = sequence == 0 ? state.withLock { $0.sequence } : sequence
        while true {
            let generation = changes.generation
            let found = state.withLock { state in (state.sequence, state.events.filter { $0.0 > start }.map(\.1)) }
            if !found.1.isEmpty || ContinuousClock.now >= deadline { return (max(found.0, start), found.1) }
            if Task.isCancelled { return (start, []) }
            await changes.wait(after: generation, for: deadline - ContinuousClock.now)
        }
    }
}

extension HostBoard: PromptHandler {
    func answer(_ prompt: HostPrompt, _ answer: HostPrompt.Answer) async -> Bool {
        switch (prompt.kind, answer) {
        case (.permissions, .decisions(let decisions)):
            return settle(prompt.id, with: decisions, by: .host)
        case (.sheet, .sheet(let value)):
            return self.answer(prompt.id, with: value, by: .host)
        case (.launchGate(let missing), .launch(let allowed)):
            guard state.withLock({ $0.gates[prompt.appId] === prompt }), let decide = gateDecider.withLock({ $0 }) else { return false }
            guard await decide(prompt.appId, missing, allowed) else { return false }
            return takeGate(prompt, answered: true)
        default:
            return false
        }
    }

    func cancel(_ prompt: HostPrompt) -> Bool {
        switch prompt.kind {
        case .permissions: return settle(prompt.id, with: [:], by: .host)
        case .sheet: return answer(prompt.id, with: nil, by: .host)
        case .launchGate: return takeGate(prompt, answered: false)
        }
    }

    /// Settles the launch gate `prompt` by the host, when it still waits.
    private func takeGate(_ prompt: HostPrompt, answered: Bool) -> Bool {
        let taken = state.withLock { state -> Bool in
            guard state.gates[prompt.appId] === prompt else { return false }
            state.gates.removeValue(forKey: prompt.appId)
            return true
        }
        if taken { told(prompt, HostPrompt.Settlement(by: .host, answered: answered)) }
        return taken
    }

    func update(_ prompt: HostPrompt, _ update: HostPrompt.Update) {
        if case .launchGate = prompt.kind {
            hub.send(.promptUpdated(prompt, update))
            return
        }
        _ = self.update(prompt.id, update)
    }
}

/// The host's callbacks, told to every observer in one order: each gets a number as it is sent.
///
/// A sender only numbers the callback and queues it; one task hands what is queued to the observers, in
/// order. Waking an observer's task costs a pool thread tens of microseconds here, so the frequent
/// callbacks (calls, capabilities, an install's progress) are handed over at most once per
/// ``window(observers:)``, which grows with the number of observers, and ``spread`` over a few
/// milliseconds of it: a hundred observers of a busy app are woken ten times a second rather than once
/// per call, never all at once, and the app's calls do not queue behind their wake-ups
/// (`Benchmarks/observers`). Any other callback (a prompt, a change of
/// state) is handed over at once, with the frequent ones queued before it; so is the first callback
/// after a quiet window.
final class CallbackHub: Sendable {
    private struct State {
        var sequence = 0
        var queued: [HostCallback] = []
        var flusher: AsyncStream<Void>.Continuation?
        /// The flusher's wait for the window's end, cut short by a callback that cannot wait.
        var pause: Task<Void, Never>?
        var urgent = false
        var lastFlush: ContinuousClock.Instant?
        var finished = false
    }

    private let broadcast = Broadcast<HostCallback>(buffered: 256)
    private let state = Mutex(State())
    /// How many observers are woken before the task that wakes them lets others run: one, measured
    /// best for a call's p99 with a hundred observers (larger groups hold a call behind their wake-ups).
    static let group = 1

    /// A batch of frequent callbacks wakes this many observers, then pauses this long: the observers'
    /// reads, each tens of microseconds of a pool thread, do not all queue ahead of an app's call at once
    /// (a hundred observers are woken over about 10 ms of a window of 100).
    static let spread = (slice: 10, for: Duration.milliseconds(1))

    /// How long frequent callbacks wait to be handed over together: 1 ms per observer, from 20 ms to
    /// 100 ms.
    static func window(observers: Int) -> Duration {
        .milliseconds(min(100, max(20, observers)))
    }

    /// Whether anyone observes: a sender skips building what nobody reads.
    var isObserved: Bool { broadcast.isObserved }

    func subscribe(buffered: Int) -> AsyncStream<HostCallback> {
        let stream = broadcast.subscribe(buffered: buffered)
        let (wakes, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let starting = state.withLock { state -> Bool in
            guard state.flusher == nil, !state.finished else { return false }
            state.flusher = continuation
            return true
        }
        if starting {
            Task { [weak self] in
                for await _ in wakes {
                    await self?.awaitWindow()
                    await self?.flush()
                }
            }
        }
        return stream
    }

    /// Queues `kind` (built only when someone observes), numbered.
    func send(_ kind: @autoclosure () -> HostCallback.Kind) {
        guard broadcast.isObserved else { return }
        let kind = kind()
        let urgent = !kind.isFrequent
        let (flusher, pause) = state.withLock { state -> (AsyncStream<Void>.Continuation?, Task<Void, Never>?) in
            state.sequence += 1
            state.queued.append(HostCallback(sequence: state.sequence, date: Date(), kind: kind))
            guard urgent else { return (state.flusher, nil) }
            state.urgent = true
            return (state.flusher, state.pause)
        }
        pause?.cancel()
        flusher?.yield(())
    }

    /// Waits until the window since the last handover ends, or a callback that cannot wait comes.
    private func awaitWindow() async {
        let observers = broadcast.count
        let pause = state.withLock { state -> Task<Void, Never>? in
            guard !state.urgent, let last = state.lastFlush else { return nil }
            let left = last + Self.window(observers: observers) - .now
            guard left > .zero else { return nil }
            let pause = Task { _ = try? await Task.sleep(for: left) }
            state.pause = pause
            return pause
        }
        await pause?.value
    }

    /// Hands every queued callback to the observers, in order: at once when one of them cannot wait,
    /// else spread over a few milliseconds (``spread``).
    private func flush() async {
        let (queued, urgent) = state.withLock { state in
            defer {
                state.queued = []
                state.urgent = false
                state.pause = nil
                state.lastFlush = .now
            }
            return (state.queued, state.urgent)
        }
        await broadcast.send(queued, yieldingEvery: Self.group, pausing: urgent ? nil : Self.spread)
    }

    private func takeQueued() -> [HostCallback] {
        state.withLock { state in
            defer { state.queued = [] }
            return state.queued
        }
    }

    func finish() {
        let flusher = state.withLock { state in
            state.finished = true
            defer { state.flusher = nil }
            return state.flusher
        }
        flusher?.finish()
        for callback in takeQueued() { broadcast.send(callback) }
        broadcast.finish()
    }
}

extension HostCallback.Kind {
    /// Whether callbacks of this kind come many a second while an app runs: they wait to be handed over
    /// together (``CallbackHub``).
    var isFrequent: Bool {
        switch self {
        case .call, .capability, .install(.progress(appId: _, versionId: _, _)): return true
        default: return false
        }
    }
}
