#if canImport(Glibc)
import Glibc
#endif

/// A strict JSON (RFC 8259) reader into ``JSONValue``, for the cache's own small documents that every
/// command reads (install records): Foundation's `JSONDecoder` with `Codable` costs about 0.3 ms on
/// first use, a sizeable part of a warm `download`; and for a platform's app list
/// (``AppRecord/listElements(_:)``), which it reads several times faster than `JSONDecoder`.
package enum JSONReader {
    /// The document in `bytes`, or `nil` when it is not one well-formed JSON value (surrounding
    /// whitespace allowed) or nests deeper than `maxDepth`. Trailing commas, which Foundation's decoder
    /// lets through, are refused.
    package static func value<Bytes: Collection<UInt8>>(_ bytes: Bytes, maxDepth: Int = 64) -> JSONValue? {
        parse(bytes, maxDepth: maxDepth) { $0.document() }
    }

    /// Whether `byte` is JSON whitespace (space, tab, line feed, carriage return).
    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }

    /// `read` with a parser over `bytes`, contiguous or copied.
    static func parse<Bytes: Collection<UInt8>, T>(_ bytes: Bytes, maxDepth: Int, _ read: (inout Parser) -> T?) -> T? {
        let parsed = bytes.withContiguousStorageIfAvailable { buffer -> T? in
            var parser = Parser(bytes: buffer, maxDepth: maxDepth)
            return read(&parser)
        }
        if let parsed { return parsed }
        return Array(bytes).withUnsafeBufferPointer { buffer in
            var parser = Parser(bytes: buffer, maxDepth: maxDepth)
            return read(&parser)
        }
    }

    struct Parser {
        let bytes: UnsafeBufferPointer<UInt8>
        let maxDepth: Int
        var position = 0
        var depth = 0

        init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
            self.bytes = bytes
            self.maxDepth = maxDepth
        }

        /// `read` after the document's leading whitespace, then nothing but whitespace to its end.
        mutating func whole<T>(_ read: (inout Parser) -> T?) -> T? {
            skipWhitespace()
            guard let result = read(&self) else { return nil }
            skipWhitespace()
            return position == bytes.count ? result : nil
        }

        mutating func document() -> JSONValue? {
            whole { $0.value() }
        }

        var current: UInt8? { position < bytes.count ? bytes[position] : nil }

        /// The run of a string's text from `start` that needs no decoding: `end` is the offset of the
        /// first `"`, `\` or control byte (or the end of the bytes), and whether every byte before it is
        /// printable ASCII (0x20-0x7E). Eight bytes at a time; the word that ends the run gives its end
        /// by its lowest marked byte, so only the last few bytes of the document go one by one.
        func plainText(from start: Int) -> (end: Int, isPrintableASCII: Bool) {
            guard let base = bytes.baseAddress else { return (start, true) }
            let count = bytes.count
            var index = start
            var notPrintable: UInt64 = 0  // bit 7 of a byte: a byte past 0x7E was seen
            let ones: UInt64 = 0x0101_0101_0101_0101
            let highs: UInt64 = 0x8080_8080_8080_8080
            // Per byte of a word, bit 7 set where the byte is zero: exact for the lowest such byte (a
            // byte above a zero one may be marked too, through the borrow); nonzero exactly when some
            // byte is zero.
            func zeroBytes(_ word: UInt64) -> UInt64 { (word &- ones) & ~word & highs }
            while count - index >= 8 {
                let word = UInt64(littleEndian: UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self))
                let ends = zeroBytes(word ^ (ones &* 0x22)) | zeroBytes(word ^ (ones &* 0x5C)) | ((word &- ones &* 0x20) & ~word & highs)
                let marks = (word & highs) | zeroBytes(word ^ (ones &* 0x7F))
                if ends != 0 {
                    // The lowest marked byte is a real end (each mask's lowest mark is exact). Of the
                    // bytes below it, a false mark of 0x7F can only sit above a real one.
                    let length = ends.trailingZeroBitCount >> 3
                    notPrintable |= marks & ((1 &<< UInt64(length &* 8)) &- 1)
                    return (index + length, notPrintable == 0)
                }
                notPrintable |= marks
                index += 8
            }
            while index < count {
                let byte = base[index]
                if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 { break }
                if byte >= 0x7F { notPrintable = 0x80 }
                index += 1
            }
            return (index, notPrintable == 0)
        }

        mutating func skipWhitespace() {
            while let byte = current, JSONReader.isWhitespace(byte) { position += 1 }
        }

        private mutating func consume(_ literal: StaticString) -> Bool {
            let count = literal.utf8CodeUnitCount
            guard bytes.count - position >= count,
                  UnsafeBufferPointer(start: literal.utf8Start, count: count).elementsEqual(bytes[position..<(position + count)]) else { return false }
            position += count
            return true
        }

        mutating func value() -> JSONValue? {
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
            var members: [String: JSONValue] = [:]
            let read = self.members({ $0.string() }) { parser, key in
                guard let member = parser.value() else { return false }
                // Of duplicate keys the first wins, as with Foundation's decoder.
                if members[key] == nil { members[key] = member }
                return true
            }
            return read ? .object(members) : nil
        }

        /// An object, at its `{`: each member's key read by `key` (at its opening quote, `nil` when not
        /// well-formed), then its value by `member` (from the value's first byte, `false` when not
        /// well-formed). `false` when the object is not well-formed.
        mutating func members<Key>(_ key: (inout Parser) -> Key?, _ member: (inout Parser, Key) -> Bool) -> Bool {
            depth += 1
            defer { depth -= 1 }
            guard depth <= maxDepth else { return false }
            position += 1
            skipWhitespace()
            if current == UInt8(ascii: "}") {
                position += 1
                return true
            }
            while true {
                skipWhitespace()
                guard current == UInt8(ascii: "\""), let name = key(&self) else { return false }
                skipWhitespace()
                guard current == UInt8(ascii: ":") else { return false }
                position += 1
                skipWhitespace()
                guard member(&self, name) else { return false }
                skipWhitespace()
                switch current {
                case UInt8(ascii: ","): position += 1
                case UInt8(ascii: "}"):
                    position += 1
                    return true
                default: return false
                }
            }
        }

        private mutating func array() -> JSONValue? {
            elements { $0.value() }.map(JSONValue.array)
        }

        /// An array, at its `[`: each element read by `element` from its first byte, `nil` when the
        /// array or an element is not well-formed.
        mutating func elements<Element>(_ element: (inout Parser) -> Element?) -> [Element]? {
            var elements: [Element] = []
            let read = eachElement { parser in
                guard let next = element(&parser) else { return false }
                elements.append(next)
                return true
            }
            return read ? elements : nil
        }

        /// An array, at its `[`: `element` reads each element from its first byte and says whether it
        /// was well-formed. `false` when the array or an element is not well-formed.
        mutating func eachElement(_ element: (inout Parser) -> Bool) -> Bool {
            depth += 1
            defer { depth -= 1 }
            guard depth <= maxDepth else { return false }
            position += 1
            skipWhitespace()
            if current == UInt8(ascii: "]") {
                position += 1
                return true
            }
            while true {
                skipWhitespace()
                guard element(&self) else { return false }
                skipWhitespace()
                switch current {
                case UInt8(ascii: ","): position += 1
                case UInt8(ascii: "]"):
                    position += 1
                    return true
                default: return false
                }
            }
        }

        /// A string, at its opening quote; its text must be valid UTF-8 without raw control characters.
        mutating func string() -> String? {
            position += 1
            let start = position
            // The common case: no escapes, one copy; ASCII needs no UTF-8 validation. (The generic
            // validating initializer on a slice cost a 10,000-app list about 3 ms of runtime generic
            // metadata lookups, found with perf.)
            var bits: UInt8 = 0
            while let byte = current, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") {
                guard byte >= 0x20 else { return nil }
                bits |= byte
                position += 1
            }
            if current == UInt8(ascii: "\"") {
                defer { position += 1 }
                let raw = UnsafeBufferPointer(rebasing: bytes[start..<position])
                return bits < 0x80 ? String(decoding: raw, as: UTF8.self) : String(validating: raw, as: UTF8.self)
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

extension JSONReader {
    /// The elements of a platform's app list (a JSON array) as ``AppRecord/listElements(_:)`` gives them,
    /// read without building the document: of each element object only the members a record keeps are
    /// made (the first of duplicate keys, as ``value(_:maxDepth:)`` keeps), the others are read, checked
    /// and dropped. `nil` exactly when ``value(_:maxDepth:)`` refuses the document or it is not an array.
    package static func appRecords<Bytes: Collection<UInt8>>(_ bytes: Bytes, maxDepth: Int) -> [AppRecord?]? {
        parse(bytes, maxDepth: maxDepth) { parser in parser.whole { $0.appRecordArray() } }
    }
}

/// The keys of an app record's members that ``Parser/selectMembers(_:_:)`` reads: those of
/// ``AppRecord/recordFields``, then the version object's (its index is `recordKeys.count - 1`).
let recordKeys: [[UInt8]] = (AppRecord.recordFields.map(\.key) + [AppRecord.Field.versionKey]).map { Array($0.utf8) }
/// The keys of ``AppRecord/versionFields``.
let versionKeys: [[UInt8]] = AppRecord.versionFields.map { Array($0.key.utf8) }

extension JSONReader.Parser {
    fileprivate mutating func appRecordArray() -> [AppRecord?]? {
        guard current == UInt8(ascii: "[") else { return nil }
        return elements { $0.appRecord() }
    }

    /// One element: its record, `.some(nil)` when it is not an object with a valid id and version, `nil`
    /// when it is not well-formed JSON. The same leniency as ``AppRecord/init(from:)``: each field of
    /// ``AppRecord/fields`` set when its text is what its kind says.
    private mutating func appRecord() -> AppRecord?? {
        guard current == UInt8(ascii: "{") else { return value().map { _ -> AppRecord? in nil } }
        var record = AppRecord.blank
        var hasVersion = false
        let versionIndex = recordKeys.count - 1
        /// A string member of `fields[index]`, or a value of another type that drops the field.
        func field(_ parser: inout JSONReader.Parser, _ field: AppRecord.Field) -> Bool {
            guard parser.current == UInt8(ascii: "\"") else { return parser.value() != nil }
            guard let text = parser.string() else { return false }
            if field.accepts(text) { field.set(&record, text) }
            return true
        }
        let read = selectMembers(recordKeys) { parser, index in
            guard index == versionIndex else { return field(&parser, AppRecord.recordFields[index]) }
            guard parser.current == UInt8(ascii: "{") else { return parser.value() != nil }
            hasVersion = true
            return parser.selectMembers(versionKeys) { parser, index in field(&parser, AppRecord.versionFields[index]) }
        }
        guard read else { return nil }
        return .some(AppRecord.isComplete(record, hasVersion: hasVersion) ? record : nil)
    }

    /// An object, at its `{`: for the first member named by each of `keys`, `member` reads the value
    /// (with the index of its key) and says whether it was well-formed; every other member is read as
    /// ``value()`` reads it and dropped. `false` when the object is not well-formed.
    mutating func selectMembers(_ keys: [[UInt8]], _ member: (inout JSONReader.Parser, Int) -> Bool) -> Bool {
        var seen = 0  // bit i: keys[i] was read
        return members({ $0.memberKey(keys) }) { parser, key in
            guard let index = key, seen & (1 << index) == 0 else { return parser.value() != nil }
            seen |= 1 << index
            return member(&parser, index)
        }
    }

    /// A member's key, at its opening quote: `.some(index)` of the key in `keys`, `.some(nil)` for
    /// another key, `nil` when it is not a well-formed string. A key without escapes is compared in
    /// place; one with escapes is decoded first.
    mutating func memberKey(_ keys: [[UInt8]]) -> Int?? {
        let start = position + 1
        let end = plainText(from: start).end
        if end < bytes.count, bytes[end] == UInt8(ascii: "\"") {
            let raw = UnsafeBufferPointer(rebasing: bytes[start..<end])
            for (index, key) in keys.enumerated() where key.count == raw.count {
                if key.withUnsafeBufferPointer({ memcmp($0.baseAddress!, raw.baseAddress!, raw.count) == 0 }) {
                    position = end + 1
                    return .some(index)
                }
            }
            // Another key without escapes: no string made, only its UTF-8 checked.
            guard UTF8Validation.isValid(raw) else { return nil }
            position = end + 1
            return .some(nil)
        }
        guard let key = string() else { return nil }
        return .some(keys.firstIndex { $0.elementsEqual(key.utf8) })
    }
}
