// The bridge's capability check, in process (Benchmarks/bridge runs it): the same store, app and
// message answered N times through BridgeDispatcher.reply(to:capability:) under a live capability,
// against the floor of the work the answer itself is (the identifier's HMAC and the reply's JSON), in
// interleaved rounds. What the dispatcher adds on top of that floor (the capability's lookups, the
// launch gate's cached reading, the call's own task and its registration) is the difference of p99s.
//   miniapp-bridge-bench --cache <dir> --out <file.json> [--calls 20000] [--rounds 5]
import Foundation
import MiniAppBridge
import MiniAppCore
import MiniAppPermissions

var arguments = CommandLine.arguments.dropFirst()
var cache = "", out = "", calls = 20_000, rounds = 5
while let argument = arguments.popFirst() {
    guard let value = arguments.popFirst() else { FileHandle.standardError.write(Data("error: \(argument) needs a value\n".utf8)); exit(64) }
    switch argument {
    case "--cache": cache = value
    case "--out": out = value
    case "--calls": calls = Int(value) ?? calls
    case "--rounds": rounds = Int(value) ?? rounds
    default: FileHandle.standardError.write(Data("error: unknown option \(argument)\n".utf8)); exit(64)
    }
}
guard !cache.isEmpty, !out.isEmpty else { FileHandle.standardError.write(Data("usage: miniapp-bridge-bench --cache <dir> --out <file.json>\n".utf8)); exit(64) }

/// The p-quantile of `values` (sorted in place).
func percentile(_ values: [Double], _ fraction: Double) -> Double {
    let ordered = values.sorted()
    return ordered[min(ordered.count - 1, Int((fraction * Double(ordered.count - 1)).rounded()))]
}

/// A host that implements nothing: getUniqueId needs none of its services.
struct Host: BridgeHostServices {}

let manifest = BundleManifest(reqPermissions: [PermissionDeclaration(name: KnownPermission.userName.rawValue)])
let store = try await PermissionStore.open(cacheDirectory: cache, executor: BlockingExecutor())
try await store.set(appId: "bench", [KnownPermission.userName.rawValue: .allowed])
let identity = BridgeIdentity(secret: BridgeIdentity.randomSecret())
let dispatcher = BridgeDispatcher(appId: "bench", manifest: manifest, store: store, services: Host(), identity: identity)
let capability = try await dispatcher.grant()
let message = BridgeMessage(id: "1.2345", action: "getUniqueId")
let clock = ContinuousClock()

func milliseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
}

var withCheck: [Double] = [], floor: [Double] = []
for _ in 0..<rounds {
    for _ in 0..<calls {
        let began = clock.now
        let reply = await dispatcher.reply(to: message, capability: capability)
        withCheck.append(milliseconds(clock.now - began))
        guard case .success = reply.outcome else { FileHandle.standardError.write(Data("error: \(reply.json)\n".utf8)); exit(70) }
    }
    for _ in 0..<calls {
        let began = clock.now
        let reply = BridgeReply(id: message.id, outcome: .success(identity.uniqueId(appId: "bench")))
        floor.append(milliseconds(clock.now - began))
        withExtendedLifetime(reply) {}
    }
}
await store.close()
let result: [String: Any] = [
    "calls": calls, "rounds": rounds,
    "reply": ["p50ms": percentile(withCheck, 0.5), "p99ms": percentile(withCheck, 0.99)],
    "floor": ["p50ms": percentile(floor, 0.5), "p99ms": percentile(floor, 0.99)],
    "addedP99ms": percentile(withCheck, 0.99) - percentile(floor, 0.99),
    "goalAddedP99ms": 0.2,
]
let data = try JSONSerialization.data(withJSONObject: result, options: [.prettyPrinted, .sortedKeys])
try data.write(to: URL(fileURLWithPath: out))
print(String(decoding: data, as: UTF8.self))
