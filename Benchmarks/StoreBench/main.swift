// One worker of Benchmarks/permissions: opens a permission store once, then for `--seconds` toggles one
// permission of its app (`set`) and runs the launch gate's check (`launchDecision`, two required
// permissions) in turn, timing each call; with --checks-only it only checks. With --rate R it starts one
// change and its check every 1/R s instead of looping as fast as it can. Writes counts, errors and the raw
// latencies (microseconds) as JSON. With --flood, the flood of Benchmarks/bridge-flood instead (Flood.swift).
//   miniapp-store-bench --store <path|postgres://...> --app <id> --worker <k> --out <file.json>
//                       [--seconds 10] [--start-at <unix time>] [--checks-only] [--rate R]
//   miniapp-store-bench --flood --store <path|postgres://...> --out <file.json> [--seconds 10] [--tasks 48] [--items 60000]
import Foundation
import MiniAppCore
import MiniAppPermissions

struct Options {
    var store = ""
    var app = ""
    var worker = 0
    var out = ""
    var seconds = 10.0
    var startAt: Double?
    var checksOnly = false
    /// Iterations per second; 0 loops as fast as it can.
    var rate = 0.0
    /// The flood of Flood.swift, by `tasks` tasks of an app holding `items` items.
    var flood = false
    var tasks = 48
    var items = 60_000
}

func parseOptions() -> Options {
    var options = Options()
    var arguments = CommandLine.arguments.dropFirst()
    func value(_ name: String) -> String {
        guard let value = arguments.popFirst() else { fail("\(name) needs a value") }
        return value
    }
    while let argument = arguments.popFirst() {
        switch argument {
        case "--store": options.store = value(argument)
        case "--app": options.app = value(argument)
        case "--worker": options.worker = Int(value(argument)) ?? 0
        case "--out": options.out = value(argument)
        case "--seconds": options.seconds = Double(value(argument)) ?? 0
        case "--start-at": options.startAt = Double(value(argument))
        case "--checks-only": options.checksOnly = true
        case "--rate": options.rate = Double(value(argument)) ?? -1
        case "--flood": options.flood = true
        case "--tasks": options.tasks = Int(value(argument)) ?? 0
        case "--items": options.items = Int(value(argument)) ?? -1
        default: fail("unknown option \(argument)")
        }
    }
    guard !options.store.isEmpty, options.flood || !options.app.isEmpty, !options.out.isEmpty, options.seconds > 0, options.rate >= 0,
        options.tasks > 0, (0...140_000).contains(options.items)
    else {
        fail("usage: miniapp-store-bench --store <path|url> --app <id> --worker <k> --out <file.json> [--seconds S] [--start-at T] [--checks-only] [--rate R], or --flood --store <path|url> --out <file.json> [--seconds S] [--tasks N] [--items N (at most 140000)]")
    }
    return options
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("miniapp-store-bench: \(message)\n".utf8))
    exit(1)
}

func microseconds(_ duration: Duration) -> Double {
    let (seconds, attoseconds) = duration.components
    return (Double(seconds) * 1e7 + Double(attoseconds) / 1e11).rounded() / 10
}

struct Report: Encodable {
    var worker: Int
    var app: String
    var store: String
    var checksOnly: Bool
    var rate: Double
    var seconds: Double
    var changes = 0
    var checks = 0
    /// Paced iterations that started more than a millisecond after their time (the worker fell behind).
    var late = 0
    /// Checks whose answer was not what this worker, the app's only writer, had just stored.
    var wrongDecisions = 0
    /// Errors by description.
    var errors: [String: Int] = [:]
    /// History rows written while it ran, and the changes it made (equal unless a change was lost).
    var historyRows: Int?
    var historyExpected: Int?
    var setMicros: [Double] = []
    var checkMicros: [Double] = []
}

let options = parseOptions()
if options.flood {
    await runFlood(options)
    exit(0)
}
let toggled = KnownPermission.userName.rawValue
let manifest = BundleManifest(reqPermissions: [
    PermissionDeclaration(name: toggled), PermissionDeclaration(name: KnownPermission.location.rawValue),
])
let store: PermissionStore
do {
    store = try await PermissionStore.open(try PermissionStoreLocation.parse(options.store, environment: ProcessInfo.processInfo.environment), executor: BlockingExecutor())
} catch {
    fail("cannot open \(options.store): \(error)")
}
// Untimed: both permissions allowed, so that each toggle of the first one is a change and flips the gate.
let historyBefore: Int
do {
    try await store.set(appId: options.app, [toggled: .allowed, KnownPermission.location.rawValue: .allowed])
    historyBefore = try await store.history(appId: options.app).count
} catch {
    fail("cannot set up \(options.app): \(error)")
}
if let startAt = options.startAt {
    let wait = startAt - Date().timeIntervalSince1970
    if wait > 0 { try await Task.sleep(for: .seconds(wait)) }
}

var report = Report(worker: options.worker, app: options.app, store: store.path, checksOnly: options.checksOnly, rate: options.rate, seconds: options.seconds)
report.setMicros.reserveCapacity(options.checksOnly ? 0 : 100_000)
report.checkMicros.reserveCapacity(options.checksOnly ? 1_000_000 : 100_000)
let clock = ContinuousClock()
let started = clock.now
let end = started + .milliseconds(Int64(options.seconds * 1000))
var expected: Bool? = true   // what the gate should answer; unknown after a failed change
var allowed = true
var iteration = 0
while clock.now < end {
    if options.rate > 0 {
        let due = started + .microseconds(Int64((Double(iteration) / options.rate * 1e6).rounded()))
        iteration += 1
        if due > clock.now {
            try? await Task.sleep(until: due, clock: clock)
        } else if clock.now - due > .milliseconds(1) {
            report.late += 1
        }
        guard clock.now < end else { break }
    }
    if !options.checksOnly {
        allowed.toggle()
        let before = clock.now
        do {
            try await store.set(appId: options.app, [toggled: allowed ? .allowed : .denied])
            report.setMicros.append(microseconds(clock.now - before))
            report.changes += 1
            expected = allowed
        } catch {
            report.errors["set: \(error)", default: 0] += 1
            expected = nil
        }
    }
    let before = clock.now
    do {
        let decision = try await store.launchDecision(appId: options.app, manifest: manifest)
        report.checkMicros.append(microseconds(clock.now - before))
        report.checks += 1
        if let expected, decision.allowed != expected { report.wrongDecisions += 1 }
    } catch {
        report.errors["check: \(error)", default: 0] += 1
    }
}
report.seconds = microseconds(clock.now - started) / 1e6
if !options.checksOnly {
    report.historyRows = (try? await store.history(appId: options.app).count).map { $0 - historyBefore }
    report.historyExpected = report.changes
}
await store.close()
do {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    try encoder.encode(report).write(to: URL(fileURLWithPath: options.out))
} catch {
    fail("cannot write \(options.out): \(error)")
}
