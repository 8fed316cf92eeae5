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
        case .array(let items):
            text += "["
            for (index, item) in items.enumerated() {
                if index > 0 { text += "," }
                append(item, to: &text)
            }
            text += "]"
        case .object(let fields):
            text += "{"
            for (index, key) in fields.keys.sorted().enumerated() {
                if index > 0 { text += "," }
                appendString(key, to: &text)
                text += ":"
                append(fields[key]!, to: &text)
            }
            text += "}"
        }
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
