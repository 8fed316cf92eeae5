// The flood of Benchmarks/bridge-flood: one app holding `--items` small items floods its secure
// storage with writes and reads from `--tasks` tasks at full speed (a refused call taking the 1 ms of a
// bridge round trip) for `--seconds`, through one store as a host's bridges share it, while another app
// makes the store call behind the bridge's setSecureStorageItems and the host records a decision of that
// app (what its page's prompt does), every 10 ms; the same probes first for a third of that time at rest.
// Writes their latencies' percentiles and the flood's counts as JSON.
import Foundation
import MiniAppCore
import MiniAppPermissions

struct FloodReport: Encodable {
    struct Summary: Encodable {
        var count: Int
        var p50ms: Double?
        var p99ms: Double?
        var maxMs: Double?
        /// Whether the p99 is within 50 ms, the bound for another app's call or a decision during a flood.
        var p99Within50ms: Bool

        init(_ micros: [Double]) {
            let sorted = micros.sorted()
            func at(_ fraction: Double) -> Double? {
                sorted.isEmpty ? nil : (sorted[min(sorted.count - 1, Int(fraction * Double(sorted.count)))] / 10).rounded() / 100
            }
            count = sorted.count
            p50ms = at(0.5)
            p99ms = at(0.99)
            maxMs = sorted.last.map { ($0 / 10).rounded() / 100 }
            p99Within50ms = (p99ms ?? .infinity) <= 50
        }
    }

    struct Probes: Encodable {
        /// The other app's `setStorageItems` (the bridge's setSecureStorageItems).
        var bridgeCall: Summary
        /// The host's decision for the other app (`set`).
        var decision: Summary
        var errors: [String: Int]
    }

    struct Flood: Encodable {
        var writes = 0
        var reads = 0
        /// Calls refused with SecureStorageError.busy.
        var refused = 0
        var errors: [String: Int] = [:]
    }

    var store: String
    var seconds: Double
    var tasks: Int
    var items: Int
    var heldBytes: Int
    var writesPerSecond: Double
    var writeBurst: Int
    var readsPerSecond: Double
    var readBurst: Int
    var atRest: Probes
    var duringFlood: Probes
    var flood: Flood
    var floodWritesPerSecond: Double
    var floodReadsPerSecond: Double
}

/// Every 10 ms until `end`: the other app's storage write, then the host's decision, each timed.
func probe(_ store: PermissionStore, until end: ContinuousClock.Instant) async -> FloodReport.Probes {
    let clock = ContinuousClock()
    var calls: [Double] = [], decisions: [Double] = [], errors: [String: Int] = [:]
    var round = 0
    var status = PermissionStatus.allowed
    while clock.now < end {
        round += 1
        status = status == .allowed ? .denied : .allowed
        var started = clock.now
        do {
            try await store.setStorageItems(appId: "other", ["round": "\(round)", "state": String(repeating: "s", count: round % 64)], limit: 1 << 20)
            calls.append(microseconds(clock.now - started))
        } catch {
            errors["bridge call: \(error)", default: 0] += 1
        }
        started = clock.now
        do {
            try await store.set(appId: "other", [KnownPermission.userName.rawValue: status])
            decisions.append(microseconds(clock.now - started))
        } catch {
            errors["decision: \(error)", default: 0] += 1
        }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return FloodReport.Probes(bridgeCall: FloodReport.Summary(calls), decision: FloodReport.Summary(decisions), errors: errors)
}

func runFlood(_ options: Options) async {
    let store: PermissionStore
    do {
        store = try await PermissionStore.open(try PermissionStoreLocation.parse(options.store, environment: ProcessInfo.processInfo.environment), executor: BlockingExecutor())
    } catch {
        fail("cannot open \(options.store): \(error)")
    }
    let limit = 1 << 20
    // Untimed: the flooding app's items (7 bytes each), in batches of 10,000, within the write burst.
    do {
        try await store.clearStorage(appId: "flood")
        var stored = 0
        while stored < options.items {
            let batch = min(10_000, options.items - stored)
            var items: [String: String] = [:]
            for index in stored..<(stored + batch) { items["k" + String(format: "%05d", index)] = "v" }
            try await store.setStorageItems(appId: "flood", items, limit: limit)
            stored += batch
        }
        try await store.set(appId: "other", [KnownPermission.userName.rawValue: .allowed])
    } catch {
        fail("cannot set up the apps: \(error)")
    }
    let held = (try? await store.storageSize(appId: "flood", limit: limit).used) ?? -1
    // The setup's writes took tokens: the flood starts with a full bucket.
    try? await Task.sleep(for: .seconds(Double(store.storageRate.writeBurst) / store.storageRate.writesPerSecond))
    let clock = ContinuousClock()
    let atRest = await probe(store, until: clock.now + .milliseconds(Int64(options.seconds * 1000 / 3)))

    let started = clock.now
    let end = started + .milliseconds(Int64(options.seconds * 1000))
    let keys = max(1, options.items)
    async let during = probe(store, until: end)
    let flood = await withTaskGroup(of: FloodReport.Flood.self) { group in
        for task in 0..<options.tasks {
            group.addTask {
                var tally = FloodReport.Flood()
                var iteration = task
                while clock.now < end {
                    iteration += 1
                    let key = "k" + String(format: "%05d", (iteration &* 7919) % keys)
                    do {
                        if iteration % 2 == 0 {
                            try await store.setStorageItems(appId: "flood", [key: iteration % 4 == 0 ? "v" : "w"], limit: limit)
                            tally.writes += 1
                        } else {
                            _ = try await store.storageItem(appId: "flood", key: key)
                            tally.reads += 1
                        }
                    } catch SecureStorageError.busy {
                        tally.refused += 1
                        // A refused call still costs the app a bridge round trip (about 1 ms, as
                        // Benchmarks/bridge measures); without it this loop would ask millions of times a
                        // second, which no app can, and only measure the machine's CPU.
                        try? await Task.sleep(for: .milliseconds(1))
                    } catch {
                        tally.errors["\(error)", default: 0] += 1
                    }
                }
                return tally
            }
        }
        var total = FloodReport.Flood()
        for await tally in group {
            total.writes += tally.writes
            total.reads += tally.reads
            total.refused += tally.refused
            total.errors.merge(tally.errors, uniquingKeysWith: +)
        }
        return total
    }
    let probes = await during
    let elapsed = microseconds(clock.now - started) / 1e6
    let rate = store.storageRate
    let report = FloodReport(
        store: store.path, seconds: elapsed, tasks: options.tasks, items: options.items, heldBytes: held,
        writesPerSecond: rate.writesPerSecond, writeBurst: rate.writeBurst, readsPerSecond: rate.readsPerSecond, readBurst: rate.readBurst,
        atRest: atRest, duringFlood: probes, flood: flood,
        floodWritesPerSecond: (Double(flood.writes) / elapsed).rounded(), floodReadsPerSecond: (Double(flood.reads) / elapsed).rounded()
    )
    await store.close()
    do {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        try encoder.encode(report).write(to: URL(fileURLWithPath: options.out))
    } catch {
        fail("cannot write \(options.out): \(error)")
    }
}
