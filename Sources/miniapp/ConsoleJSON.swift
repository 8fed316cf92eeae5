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
            if let value { string(value, &out) } else { out.append(contentsOf: "null".utf8) }
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
            string(transfer.method.rawValue, &out)
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
        string(version.versionId, &out)
        out += Array(",\n".utf8) + inner + Array("\"versionTag\" : ".utf8)
        if let tag = version.versionTag { string(tag, &out) } else { out += Array("null".utf8) }
        out += Array("\n".utf8) + [UInt8](repeating: UInt8(ascii: " "), count: indent) + Array("}".utf8)
        return out
    }

    /// `text` as JSONEncoder writes a string (`"` `\\` and C0 escaped, `\b \f \n \r \t` by name), with DEL
    /// and C1 (U+0080-U+009F) then escaped as ``Console/escapingControls(_:)`` does.
    static func string(_ text: String, _ out: inout [UInt8]) {
        // Most strings need no escape: one copy.
        let plain = text.utf8.withContiguousStorageIfAvailable { plainString($0, &out) }
        if plain != true { escapedString(text, &out) }
    }

    /// ``string(_:_:)`` of the text whose UTF-8 (valid) is `utf8`.
    static func string(utf8: UnsafeBufferPointer<UInt8>, _ out: inout [UInt8]) {
        if !plainString(utf8, &out) { escapedString(String(decoding: utf8, as: UTF8.self), &out) }
    }

    /// `utf8` quoted when none of its bytes needs an escape; else `false`, and nothing written.
    private static func plainString(_ utf8: UnsafeBufferPointer<UInt8>, _ out: inout [UInt8]) -> Bool {
        guard !utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") || $0 == 0x7F || $0 == 0xC2 }) else { return false }
        out.append(UInt8(ascii: "\""))
        out.append(contentsOf: utf8)
        out.append(UInt8(ascii: "\""))
        return true
    }

    private static func escapedString(_ text: String, _ out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var utf8 = text.utf8.makeIterator()
        var pending: UInt8?
        while let byte = pending ?? utf8.next() {
            pending = nil
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: "\\\"".utf8)
            case UInt8(ascii: "\\"): out.append(contentsOf: "\\\\".utf8)
            case 0x08: out.append(contentsOf: "\\b".utf8)
            case 0x0C: out.append(contentsOf: "\\f".utf8)
            case 0x0A: out.append(contentsOf: "\\n".utf8)
            case 0x0D: out.append(contentsOf: "\\r".utf8)
            case 0x09: out.append(contentsOf: "\\t".utf8)
            case 0x00..<0x20, 0x7F: unicodeEscape(byte, &out)
            case 0xC2:
                guard let next = utf8.next() else {
                    out.append(byte)
                    break
                }
                if (0x80...0x9F).contains(next) {
                    unicodeEscape(next, &out)
                } else {
                    out.append(byte)
                    pending = next
                }
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    private static func unicodeEscape(_ value: UInt8, _ out: inout [UInt8]) {
        out.append(contentsOf: "\\u00".utf8)
        out.append(hexDigits[Int(value >> 4)])
        out.append(hexDigits[Int(value & 0xF)])
    }

}
