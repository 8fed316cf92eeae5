/// A strict JSON (RFC 8259) reader into ``JSONValue``, for the cache's own small documents that every
/// command reads (install records): Foundation's `JSONDecoder` with `Codable` costs about 0.3 ms on
/// first use, a sizeable part of a warm `download`; and for a platform's app list
/// (``AppRecord/listElements(_:)``), which it reads several times faster than `JSONDecoder`.
package enum JSONReader {
    /// The document in `bytes`, or `nil` when it is not one well-formed JSON value (surrounding
    /// whitespace allowed) or nests deeper than `maxDepth`. Trailing commas, which Foundation's decoder
    /// lets through, are refused.
    package static func value<Bytes: Collection<UInt8>>(_ bytes: Bytes, maxDepth: Int = 64) -> JSONValue? {
        let parsed = bytes.withContiguousStorageIfAvailable { buffer -> JSONValue? in
            var parser = Parser(bytes: buffer, maxDepth: maxDepth)
            return parser.document()
        }
        if let parsed { return parsed }
        return Array(bytes).withUnsafeBufferPointer { buffer in
            var parser = Parser(bytes: buffer, maxDepth: maxDepth)
            return parser.document()
        }
    }

    private struct Parser {
        let bytes: UnsafeBufferPointer<UInt8>
        let maxDepth: Int
        var position = 0
        var depth = 0

        init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
            self.bytes = bytes
            self.maxDepth = maxDepth
        }

        mutating func document() -> JSONValue? {
            guard let value = value() else { return nil }
            skipWhitespace()
            return position == bytes.count ? value : nil
        }

        private var current: UInt8? { position < bytes.count ? bytes[position] : nil }

        private mutating func skipWhitespace() {
            while let byte = current, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { position += 1 }
        }

        private mutating func consume(_ literal: StaticString) -> Bool {
            let count = literal.utf8CodeUnitCount
            guard bytes.count - position >= count,
                  UnsafeBufferPointer(start: literal.utf8Start, count: count).elementsEqual(bytes[position..<(position + count)]) else { return false }
            position += count
            return true
        }

        private mutating func value() -> JSONValue? {
            skipWhitespace()
            switch current {
            case UInt8(ascii: "{"): return object()
            case UInt8(ascii: "["): return array()
            case UInt8(ascii: "\""): return string().map(JSONValue.string)
            case UInt8(ascii: "t"): return consume("true") ? .bool(true) : nil
            case UInt8(ascii: "f"): return consume("false") ? .bool(false) : nil
            case UInt8(ascii: "n"): return consume("null") ? .null : nil
            case .some(let byte) where byte == UInt8(ascii: "-") || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")):
                return number()
            default: return nil
            }
        }

        private mutating func object() -> JSONValue? {
            depth += 1
            defer { depth -= 1 }
            guard depth <= maxDepth else { return nil }
            position += 1
            var members: [String: JSONValue] = [:]
            skipWhitespace()
            if current == UInt8(ascii: "}") {
                position += 1
                return .object(members)
            }
            while true {
                skipWhitespace()
                guard current == UInt8(ascii: "\""), let key = string() else { return nil }
                skipWhitespace()
                guard current == UInt8(ascii: ":") else { return nil }
                position += 1
                guard let member = value() else { return nil }
                // Of duplicate keys the first wins, as with Foundation's decoder.
                if members[key] == nil { members[key] = member }
                skipWhitespace()
                switch current {
                case UInt8(ascii: ","): position += 1
                case UInt8(ascii: "}"):
                    position += 1
                    return .object(members)
                default: return nil
                }
            }
        }

        private mutating func array() -> JSONValue? {
            depth += 1
            defer { depth -= 1 }
            guard depth <= maxDepth else { return nil }
            position += 1
            var elements: [JSONValue] = []
            skipWhitespace()
            if current == UInt8(ascii: "]") {
                position += 1
                return .array(elements)
            }
            while true {
                guard let element = value() else { return nil }
                elements.append(element)
                skipWhitespace()
                switch current {
                case UInt8(ascii: ","): position += 1
                case UInt8(ascii: "]"):
                    position += 1
                    return .array(elements)
                default: return nil
                }
            }
        }

        /// A string, at its opening quote; its text must be valid UTF-8 without raw control characters.
        private mutating func string() -> String? {
            position += 1
            let start = position
            // The common case: no escapes, one validating copy.
            while let byte = current, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") {
                guard byte >= 0x20 else { return nil }
                position += 1
            }
            if current == UInt8(ascii: "\"") {
                defer { position += 1 }
                return String(validating: bytes[start..<position], as: UTF8.self)
            }
            var text = Array(bytes[start..<position])
            while let byte = current {
                switch byte {
                case UInt8(ascii: "\""):
                    position += 1
                    return String(validating: text, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    position += 1
                    guard let escaped = current else { return nil }
                    position += 1
                    switch escaped {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): text.append(escaped)
                    case UInt8(ascii: "b"): text.append(0x08)
                    case UInt8(ascii: "f"): text.append(0x0C)
                    case UInt8(ascii: "n"): text.append(0x0A)
                    case UInt8(ascii: "r"): text.append(0x0D)
                    case UInt8(ascii: "t"): text.append(0x09)
                    case UInt8(ascii: "u"):
                        guard let scalar = unicodeEscape() else { return nil }
                        text.append(contentsOf: String(Character(scalar)).utf8)
                    default: return nil
                    }
                case 0..<0x20:
                    return nil
                default:
                    text.append(byte)
                    position += 1
                }
            }
            return nil
        }

        /// The scalar of a `\u` escape (after the `u`), joining a surrogate pair; a lone surrogate is refused.
        private mutating func unicodeEscape() -> Unicode.Scalar? {
            guard let first = hexQuad() else { return nil }
            switch first {
            case 0xD800..<0xDC00:
                guard consume("\\u"), let second = hexQuad(), (0xDC00..<0xE000).contains(second) else { return nil }
                return Unicode.Scalar(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))
            case 0xDC00..<0xE000:
                return nil
            default:
                return Unicode.Scalar(first)
            }
        }

        private mutating func hexQuad() -> UInt32? {
            guard bytes.count - position >= 4 else { return nil }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[position]
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: return nil
                }
                value = value << 4 | UInt32(digit)
                position += 1
            }
            return value
        }

        /// A number in JSON's grammar: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, finite.
        private mutating func number() -> JSONValue? {
            let start = position
            if current == UInt8(ascii: "-") { position += 1 }
            if current == UInt8(ascii: "0") {
                position += 1
            } else if !digits() {
                return nil
            }
            if current == UInt8(ascii: ".") {
                position += 1
                guard digits() else { return nil }
            }
            if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
                position += 1
                if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { position += 1 }
                guard digits() else { return nil }
            }
            guard let value = Double(String(decoding: bytes[start..<position], as: UTF8.self)), value.isFinite else { return nil }
            return .number(value)
        }

        /// Skips one or more decimal digits; `false` when there is none.
        private mutating func digits() -> Bool {
            let start = position
            while let byte = current, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") { position += 1 }
            return position > start
        }
    }
}
