import Foundation
import MiniAppCore
import MiniAppKit

/// JSON written by hand, byte for byte as ``Console/json(_:)`` writes it (JSONEncoder: pretty, sorted
/// keys, slashes as they are; then DEL and C1 escaped), for the documents the most frequent commands
/// print: a first use of JSONEncoder costs a command about 1 ms. Tests compare both.
enum ConsoleJSON {
    /// An install record as `download`, `install` and `load` print it with `--json`, without the
    /// final newline.
    static func record(_ record: InstallRecord) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(1024)
        out.append(contentsOf: "{".utf8)
        var first = true
        func key(_ name: StaticString) {
            out.append(contentsOf: first ? "\n  \"".utf8 : ",\n  \"".utf8)
            first = false
            out.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
            out.append(contentsOf: "\" : ".utf8)
        }
        func text(_ name: StaticString, _ value: String?) {
            key(name)
            if let value { JSONWriter.string(value, .console, into: &out) } else { out.append(contentsOf: "null".utf8) }
        }
        func number(_ name: StaticString, _ value: Int64) {
            key(name)
            out.append(contentsOf: String(value).utf8)
        }
        if let downgradedFrom = record.downgradedFrom {
            text("downgradedFrom", downgradedFrom.versionId)
            if let tag = downgradedFrom.versionTag { text("downgradedFromTag", tag) }
        }
        text("id", record.id)
        text("installedAt", RecordCoding.format(record.installedAt))
        if let keyId = record.keyId { text("keyId", keyId) }
        text("lastUsedAt", RecordCoding.format(record.lastUsedAt))
        text("path", record.path)
        text("platform", record.platform)
        text("projectId", record.projectId)
        if let repairedAt = record.repairedAt { text("repairedAt", RecordCoding.format(repairedAt)) }
        text("sha256", record.sha256)
        text("signature", record.signature.rawValue)
        if let detail = record.signatureDetail { text("signatureDetail", detail) }
        number("sizeBytes", record.sizeBytes)
        text("source", record.source.rawValue)
        if let transfer = record.transfer {
            key("transfer")
            out.append(contentsOf: "{\n    \"fetchedBytes\" : ".utf8)
            out.append(contentsOf: String(transfer.fetchedBytes).utf8)
            out.append(contentsOf: ",\n    \"method\" : ".utf8)
            JSONWriter.string(transfer.method.rawValue, .console, into: &out)
            out.append(contentsOf: ",\n    \"reusedBytes\" : ".utf8)
            out.append(contentsOf: String(transfer.reusedBytes).utf8)
            out.append(contentsOf: "\n  }".utf8)
        }
        text("versionId", record.versionId)
        text("versionTag", record.versionTag)
        number("zipBytes", record.zipBytes)
        out.append(contentsOf: "\n}".utf8)
        return out
    }

    /// A version (`{"versionId", "versionTag"}`) as JSONEncoder writes it pretty-printed at `indent`
    /// spaces (the column of the key it is the value of).
    static func version(_ version: AppVersion, indent: Int) -> [UInt8] {
        let inner = [UInt8](repeating: UInt8(ascii: " "), count: indent + 2)
        var out: [UInt8] = Array("{\n".utf8) + inner + Array("\"versionId\" : ".utf8)
        JSONWriter.string(version.versionId, .console, into: &out)
        out += Array(",\n".utf8) + inner + Array("\"versionTag\" : ".utf8)
        if let tag = version.versionTag { JSONWriter.string(tag, .console, into: &out) } else { out += Array("null".utf8) }
        out += Array("\n".utf8) + [UInt8](repeating: UInt8(ascii: " "), count: indent) + Array("}".utf8)
        return out
    }
}
