/// JSON in the canonical form The Update Framework signs (OLPC canonical JSON, as the reference
/// implementation, securesystemslib's `encode_canonical`, writes it): object members sorted by their
/// keys' code points, no whitespace, strings escaping only `"` and `\` (every other character as its
/// UTF-8 bytes), integers only, `true`, `false` and `null`. Signatures cover these bytes of a
/// document's `signed` object, whatever whitespace or order the document was written with.
package enum CanonicalJSON {
    /// The largest integer a ``JSONValue`` number holds exactly: larger ones, and numbers with a
    /// fraction, have no canonical form.
    static let exactIntegers = 9_007_199_254_740_992.0

    /// The canonical bytes of `value`; `nil` when it holds a number that is not an integer within ±2^53.
    /// With `escapingControlCharacters`, a control character in a string is written `\u00XX`, which
    /// any JSON reader accepts (canonical JSON writes it raw): a metadata file is written so, and reads
    /// back to the same value, whose canonical bytes its signatures cover.
    package static func encode(_ value: JSONValue, escapingControlCharacters: Bool = false) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(1024)
        return write(value, &out, escaping: escapingControlCharacters) ? out : nil
    }

    private static func write(_ value: JSONValue, _ out: inout [UInt8], escaping: Bool) -> Bool {
        switch value {
        case .null:
            out += Array("null".utf8)
        case .bool(let flag):
            out += Array((flag ? "true" : "false").utf8)
        case .number(let number):
            guard number.rounded(.towardZero) == number, abs(number) <= exactIntegers else { return false }
            out += Array(String(Int64(number)).utf8)
        case .string(let text):
            JSONWriter.string(text, escaping ? .canonicalEscapingControls : .canonical, into: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                guard write(item, &out, escaping: escaping) else { return false }
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            let keys = members.keys.map { (key: $0, bytes: Array($0.utf8)) }.sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
            for (index, key) in keys.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                JSONWriter.string(key.key, escaping ? .canonicalEscapingControls : .canonical, into: &out)
                out.append(UInt8(ascii: ":"))
                guard let member = members[key.key], write(member, &out, escaping: escaping) else { return false }
            }
            out.append(UInt8(ascii: "}"))
        }
        return true
    }
}
