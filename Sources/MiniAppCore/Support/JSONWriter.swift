/// The package's one JSON writer: the bridge's answers and scripts, the command line's documents
/// (`--json` records, the app list) and TUF's canonical bytes write their strings and values here.
///
/// Strings are escaped for where the text goes (``Escaping``); reading JSON is ``JSONReader``'s.
package enum JSONWriter {
    /// What a string escapes beyond `"` and `\`.
    package enum Escaping: Sendable {
        /// As JSONEncoder writes a string (C0 escaped, `\b \f \n \r \t` by name), then DEL and C1
        /// (U+0080-U+009F) as `\u00XX`: a document for a terminal or a pipe, byte for byte what
        /// `JSONEncoder` and the console's escaping of control characters make.
        case console
        /// What JSON requires (`\n \r \t` by name, the rest of C0 as `\u00XX`), and `<`, `>`, `&`, DEL,
        /// U+2028 and U+2029 as `\uXXXX`: text safe to embed in HTML and in JavaScript.
        case embeddable
        /// Only `"` and `\`, every other character as its UTF-8 bytes: OLPC canonical JSON, whose bytes
        /// TUF signs (``CanonicalJSON``).
        case canonical
        /// ``canonical``, with C0 as `\u00XX`: a metadata file any JSON reader reads back to the
        /// same value.
        case canonicalEscapingControls
    }

    /// Compact JSON text of `value`, keys sorted, ``Escaping/embeddable``.
    package static func text(_ value: JSONValue) -> String {
        var out: [UInt8] = []
        write(value, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Compact JSON text of an object whose keys are written in the order given (the shapes other
    /// hosts' documents print, key for key), ``Escaping/embeddable``.
    package static func text(ordered fields: [(String, OrderedJSON)]) -> String {
        var out: [UInt8] = []
        write(.object(fields), into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// `value` pretty-printed as JSONEncoder prints it with `.prettyPrinted` and `.sortedKeys` (two
    /// spaces a level, `"key" : value`), its lines after the first indented by `indent` spaces: the
    /// value of a member at that depth.
    package static func pretty(_ value: JSONValue, indent: Int, _ escaping: Escaping, into out: inout [UInt8]) {
        func newline(_ depth: Int) {
            out.append(UInt8(ascii: "\n"))
            out.append(contentsOf: repeatElement(UInt8(ascii: " "), count: depth))
        }
        switch value {
        case .array(let items) where !items.isEmpty:
            out.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                newline(indent + 2)
                pretty(item, indent: indent + 2, escaping, into: &out)
            }
            newline(indent)
            out.append(UInt8(ascii: "]"))
        case .object(let members) where !members.isEmpty:
            out.append(UInt8(ascii: "{"))
            for (index, key) in members.keys.sorted().enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                newline(indent + 2)
                string(key, escaping, into: &out)
                out.append(contentsOf: " : ".utf8)
                pretty(members[key]!, indent: indent + 2, escaping, into: &out)
            }
            newline(indent)
            out.append(UInt8(ascii: "}"))
        case .string(let text):
            string(text, escaping, into: &out)
        default:
            write(value, into: &out)
        }
    }

    /// `text` quoted and escaped as `escaping` says.
    package static func string(_ text: String, _ escaping: Escaping, into out: inout [UInt8]) {
        var text = text
        text.withUTF8 { string(utf8: $0, escaping, into: &out) }
    }

    /// The text whose UTF-8 (valid) is `utf8`, quoted and escaped as `escaping` says. Most texts need no
    /// escape and are copied in one piece.
    package static func string(utf8: UnsafeBufferPointer<UInt8>, _ escaping: Escaping, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        if utf8.contains(where: { needsCare($0, escaping) }) {
            escaped(utf8, escaping, into: &out)
        } else {
            out.append(contentsOf: utf8)
        }
        out.append(UInt8(ascii: "\""))
    }

    /// Whether `byte` is, or may begin, something `escaping` writes otherwise than as it is.
    @inline(__always)
    private static func needsCare(_ byte: UInt8, _ escaping: Escaping) -> Bool {
        if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return true }
        switch escaping {
        case .console: return byte < 0x20 || byte == 0x7F || byte == 0xC2
        case .embeddable: return byte < 0x20 || byte == 0x7F || byte == UInt8(ascii: "<") || byte == UInt8(ascii: ">") || byte == UInt8(ascii: "&") || byte == 0xE2
        case .canonical: return false
        case .canonicalEscapingControls: return byte < 0x20
        }
    }

    private static func escaped(_ utf8: UnsafeBufferPointer<UInt8>, _ escaping: Escaping, into out: inout [UInt8]) {
        var index = 0
        while index < utf8.count {
            let byte = utf8[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: "\\\"".utf8)
            case UInt8(ascii: "\\"): out.append(contentsOf: "\\\\".utf8)
            case _ where escaping == .canonical: out.append(byte)
            case 0x00..<0x20 where escaping == .canonicalEscapingControls: unicodeEscape(UInt32(byte), into: &out)
            case _ where escaping == .canonicalEscapingControls: out.append(byte)
            case 0x0A: out.append(contentsOf: "\\n".utf8)
            case 0x0D: out.append(contentsOf: "\\r".utf8)
            case 0x09: out.append(contentsOf: "\\t".utf8)
            case 0x08 where escaping == .console: out.append(contentsOf: "\\b".utf8)
            case 0x0C where escaping == .console: out.append(contentsOf: "\\f".utf8)
            case 0x00..<0x20, 0x7F: unicodeEscape(UInt32(byte), into: &out)
            case UInt8(ascii: "<") where escaping == .embeddable, UInt8(ascii: ">") where escaping == .embeddable,
                 UInt8(ascii: "&") where escaping == .embeddable:
                unicodeEscape(UInt32(byte), into: &out)
            case 0xC2 where escaping == .console && index < utf8.count && (0x80...0x9F).contains(utf8[index]):
                unicodeEscape(UInt32(utf8[index]), into: &out)
                index += 1
            case 0xE2 where escaping == .embeddable && index + 1 < utf8.count && utf8[index] == 0x80 && (0xA8...0xA9).contains(utf8[index + 1]):
                unicodeEscape(0x2000 + UInt32(utf8[index + 1]) - 0xA8 + 0x28, into: &out)
                index += 2
            default: out.append(byte)
            }
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// `\u` and `value` as four lowercase hexadecimal digits.
    private static func unicodeEscape(_ value: UInt32, into out: inout [UInt8]) {
        out.append(contentsOf: "\\u".utf8)
        for shift in stride(from: 12, through: 0, by: -4) { out.append(hexDigits[Int((value >> UInt32(shift)) & 0xF)]) }
    }

    private static func write(_ value: JSONValue, into out: inout [UInt8]) {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let flag): out.append(contentsOf: (flag ? "true" : "false").utf8)
        case .number(let number):
            if number.isFinite, number == number.rounded(), abs(number) < 9e15 {
                out.append(contentsOf: String(Int64(number)).utf8)
            } else if number.isFinite {
                out.append(contentsOf: "\(number)".utf8)
            } else {
                out.append(contentsOf: "null".utf8)
            }
        case .string(let text): string(text, .embeddable, into: &out)
        case .array(let items): list(items, UInt8(ascii: "["), UInt8(ascii: "]"), into: &out) { write($0, into: &$1) }
        case .object(let fields):
            list(fields.keys.sorted(), UInt8(ascii: "{"), UInt8(ascii: "}"), into: &out) { key, out in
                string(key, .embeddable, into: &out)
                out.append(UInt8(ascii: ":"))
                write(fields[key]!, into: &out)
            }
        }
    }

    private static func write(_ value: OrderedJSON, into out: inout [UInt8]) {
        switch value {
        case .string(let text): string(text, .embeddable, into: &out)
        case .bool(let flag): out.append(contentsOf: (flag ? "true" : "false").utf8)
        case .array(let items): list(items, UInt8(ascii: "["), UInt8(ascii: "]"), into: &out) { write($0, into: &$1) }
        case .object(let fields):
            list(fields, UInt8(ascii: "{"), UInt8(ascii: "}"), into: &out) { field, out in
                string(field.0, .embeddable, into: &out)
                out.append(UInt8(ascii: ":"))
                write(field.1, into: &out)
            }
        }
    }

    /// `items` between `open` and `close`, separated by commas, each written by `each`.
    private static func list<Items: Collection>(
        _ items: Items, _ open: UInt8, _ close: UInt8, into out: inout [UInt8], _ each: (Items.Element, inout [UInt8]) -> Void
    ) {
        out.append(open)
        var first = true
        for item in items {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            each(item, &out)
        }
        out.append(close)
    }
}

/// A JSON value whose objects keep their keys in order (``JSONWriter/text(ordered:)``).
package indirect enum OrderedJSON: Sendable {
    case string(String)
    case bool(Bool)
    case array([OrderedJSON])
    case object([(String, OrderedJSON)])
}
