package import MiniAppCore

/// Compact JSON text of a ``JSONValue``, keys sorted, safe to embed in HTML and JavaScript: `<`, `>`,
/// `&`, U+2028 and U+2029 are escaped as well as what JSON requires.
package enum JSONText {
    /// The JSON text of `value`.
    package static func encode(_ value: JSONValue) -> String {
        var text = ""
        append(value, to: &text)
        return text
    }

    /// The JSON text of an object whose keys are written in the order given: the shapes other hosts'
    /// documents print, key for key.
    package static func ordered(_ fields: [(String, OrderedJSON)]) -> String {
        var text = ""
        append(.object(fields), to: &text)
        return text
    }

    private static func append(_ value: OrderedJSON, to text: inout String) {
        switch value {
        case .string(let string): appendString(string, to: &text)
        case .bool(let flag): text += flag ? "true" : "false"
        case .array(let items): appendList(items, "[", "]", to: &text) { append($0, to: &$1) }
        case .object(let fields):
            appendList(fields, "{", "}", to: &text) { field, text in
                appendString(field.0, to: &text)
                text += ":"
                append(field.1, to: &text)
            }
        }
    }

    private static func append(_ value: JSONValue, to text: inout String) {
        switch value {
        case .null: text += "null"
        case .bool(let flag): text += flag ? "true" : "false"
        case .number(let number):
            if number.isFinite, number == number.rounded(), abs(number) < 9e15 {
                text += String(Int64(number))
            } else if number.isFinite {
                text += "\(number)"
            } else {
                text += "null"
            }
        case .string(let string): appendString(string, to: &text)
        case .array(let items): appendList(items, "[", "]", to: &text) { append($0, to: &$1) }
        case .object(let fields):
            appendList(fields.keys.sorted(), "{", "}", to: &text) { key, text in
                appendString(key, to: &text)
                text += ":"
                append(fields[key]!, to: &text)
            }
        }
    }

    /// `items` between `open` and `close`, separated by commas, each written by `each`.
    private static func appendList<Items: Collection>(
        _ items: Items, _ open: String, _ close: String, to text: inout String, _ each: (Items.Element, inout String) -> Void
    ) {
        text += open
        var first = true
        for item in items {
            if !first { text += "," }
            first = false
            each(item, &text)
        }
        text += close
    }

    private static func appendString(_ string: String, to text: inout String) {
        text += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case "<", ">", "&", "\u{2028}", "\u{2029}", "\u{7F}":
                text += "\\u" + hex4(scalar.value)
            default:
                if scalar.value < 0x20 {
                    text += "\\u" + hex4(scalar.value)
                } else {
                    text.unicodeScalars.append(scalar)
                }
            }
        }
        text += "\""
    }

    private static func hex4(_ value: UInt32) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}

/// A JSON value whose objects keep their keys in order (``JSONText/ordered(_:)``).
package indirect enum OrderedJSON: Sendable {
    case string(String)
    case bool(Bool)
    case array([OrderedJSON])
    case object([(String, OrderedJSON)])
}
