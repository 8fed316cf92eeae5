import Foundation
import MiniAppBridge
import MiniAppCore
import MiniAppKit
import MiniAppPermissions
import MiniAppWebHost
import Synchronization

// The observers' benchmark host (Benchmarks/observers): a browser host over a development folder whose
// observers change at run time, as its stdin says, one line per phase:
//   none        no observer
//   observers   100 observers that read every callback
//   slow        those, and one more that never reads
// Prints the host page's URL first. At each line it ends the phase before (its observers given the
// time to hear the last callbacks, then dropped) with `{"phase": ..., "calls": n, "heard": [n, ...]}`
// (the calls the app made in the phase, and what each reading observer heard of them), starts the new
// one and prints `ready`. Stdin's end ends the last phase and stops the host.
//   miniapp-observer-bench <folder> <state-dir>
let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    FileHandle.standardError.write(Data("usage: miniapp-observer-bench <folder> <state-dir>\n".utf8))
    exit(64)
}
var configuration = MiniAppConfiguration(cacheDirectory: arguments[2])
configuration.offline = true
let runtime = MiniAppRuntime(configuration: configuration)
let host = try await BrowserHost(runtime: runtime, identity: BridgeIdentity(secret: Array(repeating: 5, count: 32)))
_ = try await host.develop(folder: arguments[1], appId: "bench")
guard let dispatcher = host.dispatcher(appId: "bench") else { fatalError("the host serves no bench app") }

@Sendable func write(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

// The calls answered, counted apart from the observers.
let answered = Atomic<Int>(0)
let counter = Task {
    for await _ in dispatcher.calls() { answered.add(1, ordering: .relaxed) }
}
let server = Task {
    try await host.run { url in write(url.absoluteString) }
}

/// One phase's observers: the readers' tasks (each returns how many calls it heard) and the slow one's stream.
struct Phase {
    var name = "none"
    var readers: [Task<Int, Never>] = []
    var slow: AsyncStream<HostCallback>?
    var callsBefore = 0
}

func start(_ name: String) async -> Phase {
    var phase = Phase(name: name)
    if name != "none" {
        for _ in 0..<100 {
            let stream = await host.callbacks(buffered: 1 << 16)
            phase.readers.append(Task {
                var heard = 0
                for await callback in stream {
                    if case .call = callback.kind { heard += 1 }
                }
                return heard
            })
        }
    }
    if name == "slow" { phase.slow = await host.callbacks(buffered: 8) }
    phase.callsBefore = answered.load(ordering: .relaxed)
    return phase
}

func end(_ phase: Phase) async {
    // The page is idle between phases: the observers get the time to hear the last calls.
    try? await Task.sleep(for: .milliseconds(300))
    let calls = answered.load(ordering: .relaxed) - phase.callsBefore
    phase.readers.forEach { $0.cancel() }
    var heard: [Int] = []
    for reader in phase.readers { heard.append(await reader.value) }
    withExtendedLifetime(phase.slow) {}
    write("{\"phase\": \"\(phase.name)\", \"calls\": \(calls), \"heard\": \(heard)}")
}

// Stdin, read on a thread of its own: a blocking read must not hold one of the pool's.
let (lines, input) = AsyncStream<String>.makeStream()
Thread.detachNewThread {
    while let line = readLine() { input.yield(line.trimmingCharacters(in: .whitespaces)) }
    input.finish()
}
var phase = Phase()
for await line in lines {
    guard ["none", "observers", "slow"].contains(line) else {
        FileHandle.standardError.write(Data("unknown phase \(line)\n".utf8))
        continue
    }
    await end(phase)
    phase = await start(line)
    write("ready")
}
await end(phase)
counter.cancel()
server.cancel()
_ = await server.result
await runtime.shutdown()
