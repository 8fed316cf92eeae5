// The time-zone benchmark's worker (Benchmarks/tz): extracts one zip again and again with `TZ` unset
// and with `TZ=:/etc/localtime`, alternating, and prints each round's wall and CPU time as JSON lines.
//
// libarchive converts each entry's DOS time with mktime(), and with TZ unset glibc checks
// /etc/localtime on every call. A host process that embeds MiniAppKit may leave TZ unset: this measures
// what that costs an extraction, with everything else equal (same process, same zip, same disk).
import Foundation
import MiniAppCore

let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
    FileHandle.standardError.write(Data("usage: miniapp-extract-bench <zip> <scratch folder> [rounds]\n".utf8))
    exit(64)
}
let zip = arguments[1]
let scratch = arguments[2]
let rounds = arguments.count > 3 ? Int(arguments[3]) ?? 15 : 15
/// `control` as the fourth argument: both halves with TZ set (an A/A run: the difference the method
/// finds where there is none).
let control = arguments.count > 4 && arguments[4] == "control"

/// This process's user and system CPU time, in seconds.
func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    let user = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
    let system = Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    return user + system
}

let extractor = ArchiveExtractor()
/// One extraction into a fresh folder with `TZ` as given; the folder is removed afterwards, untimed.
func round(_ number: Int, tz: String?) throws -> (wall: Double, cpu: Double) {
    if let tz { setenv("TZ", tz, 1) } else if control { setenv("TZ", ":/etc/localtime", 1) } else { unsetenv("TZ") }
    tzset()
    let destination = scratch + "/x\(number)"
    let cpu = cpuSeconds()
    let start = ContinuousClock.now
    _ = try extractor.extract(zip, into: destination)
    let wall = ContinuousClock.now - start
    let used = cpuSeconds() - cpu
    try FileManager.default.removeItem(atPath: destination)
    return (Double(wall.components.seconds) + Double(wall.components.attoseconds) / 1e18, used)
}

// One round of each to warm the page cache and the allocator, not reported.
_ = try round(0, tz: nil)
_ = try round(1, tz: ":/etc/localtime")
for index in 0..<rounds {
    // Alternating which goes first, so that a drift of the machine touches both alike.
    let order: [String?] = index % 2 == 0 ? [nil, ":/etc/localtime"] : [":/etc/localtime", nil]
    for (offset, tz) in order.enumerated() {
        let (wall, cpu) = try round(2 + 2 * index + offset, tz: tz)
        print(#"{"tz": "\#(tz == nil ? "unset" : "set")", "wall": \#(wall), "cpu": \#(cpu)}"#)
    }
}
