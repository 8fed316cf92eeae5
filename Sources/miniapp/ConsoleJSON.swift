import Foundation
import MiniAppCore
import MiniAppKit

/// The documents the most frequent commands print, written with ``JSONWriter`` byte for byte as
/// ``Console/json(_:)`` writes them (JSONEncoder: pretty, sorted keys, slashes as they are; then DEL and
/// C1 escaped), without JSONEncoder: its first use costs a command about 1 ms. Tests compare both.
enum ConsoleJSON {
    /// An install record as `download`, `install` and `load` print it with `--json`, without the
    /// final newline.
    static func record(_ record: InstallRecord) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(1024)
        out.append(UInt8(ascii: "{"))
        for (index, member) in record.members(storage: false).enumerated() {
            out.append(contentsOf: (index == 0 ? "\n  " : ",\n  ").utf8)
            JSONWriter.string(member.key, .console, into: &out)
            out.append(contentsOf: " : ".utf8)
            JSONWriter.pretty(member.value, indent: 2, .console, into: &out)
        }
        out.append(contentsOf: "\n}".utf8)
        return out
    }

    /// A version (`{"versionId", "versionTag"}`) as JSONEncoder writes it pretty-printed at `indent`
    /// spaces (the column of the key it is the value of).
    static func version(_ version: AppVersion, indent: Int) -> [UInt8] {
        var out: [UInt8] = []
        let object = JSONValue.object(["versionId": .string(version.versionId), "versionTag": version.versionTag.map { .string($0) } ?? .null])
        JSONWriter.pretty(object, indent: indent, .console, into: &out)
        return out
    }
}
