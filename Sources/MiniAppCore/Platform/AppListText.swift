package import Foundation

/// A platform's app list read for printing, without making its records: the texts of each record
/// that ``AppRecord/listElements(_:)`` would keep, as places in the list's own bytes.
///
/// It keeps the same records with the same texts: a record lacking a valid id or version is dropped,
/// a field of the wrong type is dropped, a URL field is kept only when ``AppRecord``'s would be, and as
/// the text `URL.absoluteString` gives. A text without escapes stays in place; a text with escapes, or
/// a URL that Foundation must judge, is decoded once and kept aside. On a list of 10,000 apps, making
/// the records (strings, URLs) took most of `list`'s time.
package struct AppListText: Sendable {
    /// One text of a record: where its UTF-8 is, and whether it needs no escape.
    package struct Text: Sendable {
        // Inlinable, with what they read, for `list`'s output, which reads every text of every record:
        // as calls into this module they cost a 10,000-app list about 0.5 ms.
        @usableFromInline static var present: UInt32 { 1 << 31 }
        @usableFromInline static var decoded: UInt32 { 1 << 30 }
        @usableFromInline static var plain: UInt32 { 1 << 29 }
        /// The longest text a `Text` holds.
        @usableFromInline static var maximumCount: Int { (1 << 29) - 1 }

        /// The offset of its first byte, in the list's bytes or, when decoded, in the decoded texts.
        @usableFromInline let start: UInt32
        /// Its count of bytes, then flags.
        @usableFromInline let bits: UInt32

        static let absent = Text(start: 0, bits: 0)

        private init(start: UInt32, bits: UInt32) {
            self.start = start
            self.bits = bits
        }

        init(start: Int, count: Int, isPlain: Bool, isDecoded: Bool) {
            precondition(count <= Self.maximumCount)
            self.start = UInt32(start)
            self.bits = Self.present | UInt32(count) | (isPlain ? Self.plain : 0) | (isDecoded ? Self.decoded : 0)
        }

        /// Its count of bytes.
        @inlinable package var count: Int { Int(bits & UInt32(Self.maximumCount)) }
        /// Whether it is in the decoded texts rather than in the list's bytes.
        @inlinable var isDecoded: Bool { bits & Self.decoded != 0 }
        /// Whether the record has this text.
        @inlinable package var isPresent: Bool { bits & Self.present != 0 }
        /// Whether it is all printable ASCII (0x20-0x7E) other than `"` and `\`: no byte needs an escape
        /// in a JSON string or on a terminal. (A text in place has neither: they would be escapes.)
        @inlinable package var isPlain: Bool { bits & Self.plain != 0 }

        /// The same text once `offset` bytes of decoded texts were put before its own.
        func rebased(by offset: Int) -> Text {
            isDecoded ? Text(start: start + UInt32(offset), bits: bits) : self
        }
    }

    /// The texts of one record, one per field of ``AppRecord/fields``, at its ``AppRecord/Field/slot``.
    package struct Entry: Sendable {
        /// As many texts as ``AppRecord/fields`` (a test holds the two to the same count), inline: no
        /// array to allocate per record of a list of 10,000.
        @usableFromInline var texts = InlineArray<7, Text>(repeating: .absent)

        /// The text of `field`.
        @inlinable package subscript(field: AppRecord.Field) -> Text {
            get { self[slot: field.slot] }
            set { self[slot: field.slot] = newValue }
        }

        @inlinable package subscript(slot slot: Int) -> Text {
            get { texts[slot] }
            set { texts[slot] = newValue }
        }

        /// How many texts an entry holds.
        package static var capacity: Int { InlineArray<7, Text>.count }

        /// The same texts once `offset` bytes of decoded texts were put before their own.
        func rebased(by offset: Int) -> Entry {
            var entry = self
            for slot in texts.indices { entry.texts[slot] = texts[slot].rebased(by: offset) }
            return entry
        }
    }

    /// The records kept, in the list's order.
    package fileprivate(set) var entries: [Entry] = []
    /// How many elements the list had, kept or not.
    package fileprivate(set) var elementCount = 0
    private let bytes: Data
    /// The texts that are not in `bytes` as they are, one after the other.
    private var decoded: [UInt8] = []

    private init(bytes: Data) {
        self.bytes = bytes
    }

    /// The records of `list` (an app list's body) as ``AppRecord/listElements(_:)`` reads them; `nil`
    /// exactly when that reader does not take the document.
    package static func read(_ list: Data) -> AppListText? {
        // Offsets are 32-bit; a decoded URL may be up to three times as long as its text.
        guard list.count <= Text.maximumCount / 3 else { return nil }
        var text = AppListText(bytes: list)
        let read = list.withUnsafeBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            if bytes.count >= splitMinimumBytes, ProcessEnvironment.processorCount > 1, let split = splitCandidate(bytes) {
                return readInTwo(bytes, at: split, into: &text)
            }
            text.entries.reserveCapacity(list.count / 128)
            var parser = JSONReader.Parser(bytes: bytes, maxDepth: maxDepth)
            return parser.appList(into: &text, stoppingAt: nil) == .whole
        }
        return read ? text : nil
    }

    private static let maxDepth = 256
    /// A list at least this long is read in two halves at once, on two threads: a list of 10,000 apps
    /// (2 MB) took about 7-12 ms to read in one pass.
    static let splitMinimumBytes = 256 << 10

    /// Where the second half of a list might start: the first `{` past the middle that follows a `,`
    /// (with whitespace between them or not). It is a guess, as these bytes may sit in a string;
    /// ``readInTwo(_:at:into:)`` takes it only when reading from the start lands on it.
    static func splitCandidate(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        guard let base = bytes.baseAddress else { return nil }
        var index = bytes.count / 2
        let limit = min(bytes.count, index + (64 << 10))
        while index < limit, let comma = firstIndex(of: UInt8(ascii: ","), in: base, index..<limit) {
            index = comma + 1
            while index < limit, JSONReader.isWhitespace(base[index]) { index += 1 }
            if index < limit, base[index] == UInt8(ascii: "{") { return index }
        }
        return nil
    }

    /// The list read in two halves at once: the elements from `split` on, on a thread of their own,
    /// while this one reads from the start. The second half counts only when the first one, element
    /// by element, starts an element exactly at `split`: the two readings are then the one pass split
    /// in two, with the same records, texts and verdict. When it does not (the guess was inside a
    /// string), this thread reads on to the end and the second half is dropped.
    private static func readInTwo(_ bytes: UnsafeBufferPointer<UInt8>, at split: Int, into text: inout AppListText) -> Bool {
        /// A half's reading, handed back from its thread.
        final class Half: @unchecked Sendable {
            var text: AppListText
            var outcome = JSONReader.Parser.AppListOutcome.failed
            init(_ text: AppListText) { self.text = text }
        }
        /// The list's bytes, read by both threads, valid until both are done.
        struct SharedBytes: @unchecked Sendable { let buffer: UnsafeBufferPointer<UInt8> }
        let shared = SharedBytes(buffer: bytes)
        let halves = [Half(text), Half(AppListText(bytes: text.bytes))]
        BlockingExecutor.forkJoin(2, name: "miniapp.list") { part in
            let half = halves[part]
            var parser = JSONReader.Parser(bytes: shared.buffer, maxDepth: maxDepth)
            if part == 0 {
                half.text.entries.reserveCapacity(split / 128)
                half.outcome = parser.appList(into: &half.text, stoppingAt: split)
            } else {
                half.text.entries.reserveCapacity((shared.buffer.count - split) / 128)
                half.outcome = parser.appListElements(from: split, into: &half.text)
            }
        }
        switch halves[0].outcome {
        case .failed:
            return false
        case .whole:
            text = halves[0].text
            return true
        case .landed:
            guard halves[1].outcome == .whole else { return false }
            text = halves[0].text
            text.append(halves[1].text)
            return true
        }
    }

    /// `other`, read from the elements that follow this list's, added after them.
    private mutating func append(_ other: AppListText) {
        let offset = decoded.count
        decoded.append(contentsOf: other.decoded)
        entries.reserveCapacity(entries.count + other.entries.count)
        for entry in other.entries { entries.append(offset == 0 ? entry : entry.rebased(by: offset)) }
        elementCount += other.elementCount
    }

    /// `records` as texts, all of them kept.
    package init(records: [AppRecord]) {
        self.bytes = Data()
        for record in records {
            var entry = Entry()
            for field in AppRecord.fields {
                if let text = field.text(record) { entry[field] = decode(text) }
            }
            entries.append(entry)
        }
        elementCount = records.count
    }

    /// `body` with a reader of the texts, valid only during the call.
    package func withTexts<Result>(_ body: (Texts) throws -> Result) rethrows -> Result {
        try bytes.withUnsafeBytes { raw in
            try decoded.withUnsafeBufferPointer { decoded in
                try body(Texts(bytes: raw.bindMemory(to: UInt8.self), decoded: decoded))
            }
        }
    }

    /// Reads the texts of ``AppListText/entries``.
    package struct Texts {
        @usableFromInline let bytes: UnsafeBufferPointer<UInt8>
        @usableFromInline let decoded: UnsafeBufferPointer<UInt8>

        /// The UTF-8 of `text` (valid, no escapes left); `nil` when the text is absent.
        @inlinable package func utf8(_ text: Text) -> UnsafeBufferPointer<UInt8>? {
            guard text.isPresent else { return nil }
            let start = Int(text.start)
            return UnsafeBufferPointer(rebasing: (text.isDecoded ? decoded : bytes)[start..<(start + text.count)])
        }

        /// The text as a string; `nil` when it is absent.
        package func string(_ text: Text) -> String? {
            utf8(text).map { String(decoding: $0, as: UTF8.self) }
        }
    }

    fileprivate mutating func decode(_ string: String) -> Text {
        let start = decoded.count
        decoded.append(contentsOf: string.utf8)
        let count = decoded.count - start
        let isPlain = decoded[start...].allSatisfy { $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }
        return Text(start: start, count: count, isPlain: isPlain, isDecoded: true)
    }
}

extension JSONReader.Parser {
    /// How far a reading of an app list went.
    enum AppListOutcome {
        /// The document is not a well-formed array (or has more than whitespace around it).
        case failed
        /// The whole document was read.
        case whole
        /// An element starts at the offset the reading was to stop at.
        case landed
    }

    /// The document, an array of app records, as `whole` reads it with `eachElement`, each element
    /// by ``appListElement(into:)``; stops before an element that starts at `split`.
    fileprivate mutating func appList(into list: inout AppListText, stoppingAt split: Int?) -> AppListOutcome {
        skipWhitespace()
        guard current == UInt8(ascii: "[") else { return .failed }
        position += 1
        depth = 1
        skipWhitespace()
        if current == UInt8(ascii: "]") { return arrayEnd() }
        while true {
            skipWhitespace()
            if position == split { return .landed }
            guard appListElement(into: &list) else { return .failed }
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): position += 1
            case UInt8(ascii: "]"): return arrayEnd()
            default: return .failed
            }
        }
    }

    /// The elements from `start` (the first byte of one) to the array's end and the document's, as
    /// ``appList(into:stoppingAt:)`` reads them.
    fileprivate mutating func appListElements(from start: Int, into list: inout AppListText) -> AppListOutcome {
        position = start
        depth = 1
        while true {
            guard appListElement(into: &list) else { return .failed }
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","):
                position += 1
                skipWhitespace()
            case UInt8(ascii: "]"): return arrayEnd()
            default: return .failed
            }
        }
    }

    /// At the array's `]`: the document must end after it, whitespace aside.
    private mutating func arrayEnd() -> AppListOutcome {
        position += 1
        depth = 0
        skipWhitespace()
        return position == bytes.count ? .whole : .failed
    }

    /// One element, as ``appRecord()`` reads it: its texts added to `list` when it is an object with a
    /// valid id and version. `false` when it is not well-formed JSON.
    private mutating func appListElement(into list: inout AppListText) -> Bool {
        list.elementCount += 1
        guard current == UInt8(ascii: "{") else { return value() != nil }
        var entry = AppListText.Entry()
        var hasVersion = false
        let versionIndex = recordKeys.count - 1
        /// A string member of `field`, or a value of another type that drops the field.
        func field(_ parser: inout JSONReader.Parser, _ field: AppRecord.Field) -> Bool {
            guard parser.current == UInt8(ascii: "\"") else { return parser.value() != nil }
            guard let text = parser.listText(into: &list, as: field.kind) else { return false }
            entry[field] = text
            return true
        }
        let read = selectMembers(recordKeys) { parser, index in
            guard index == versionIndex else { return field(&parser, AppRecord.recordFields[index]) }
            guard parser.current == UInt8(ascii: "{") else { return parser.value() != nil }
            hasVersion = true
            return parser.selectMembers(versionKeys) { parser, index in field(&parser, AppRecord.versionFields[index]) }
        }
        guard read else { return false }
        if hasVersion, AppRecord.requiredFields.allSatisfy({ entry[$0].isPresent }) { list.entries.append(entry) }
        return true
    }

    /// The string at the opening quote as a text of `list`: in place when it has no escapes (and, for
    /// a URL, when ``isPlainWebURL(_:)`` vouches for it), else decoded. `nil` when it is not well-formed.
    private mutating func listText(into list: inout AppListText, as kind: AppRecord.Field.Kind) -> AppListText.Text? {
        let quote = position
        let start = position + 1
        // The common case, no escapes: the text stays in place.
        let (end, isPrintableASCII) = plainText(from: start)
        if end < bytes.count, bytes[end] == UInt8(ascii: "\"") {
            let raw = UnsafeBufferPointer(rebasing: bytes[start..<end])
            position = end + 1
            guard isPrintableASCII || UTF8Validation.isValid(raw) else { return nil }
            guard raw.count <= AppListText.Text.maximumCount else { return nil }
            let text = AppListText.Text(start: start, count: raw.count, isPlain: isPrintableASCII, isDecoded: false)
            switch kind {
            case .text:
                return text
            case .identifier:
                return Identifier.isValid(utf8: raw) ? text : .absent
            case .webURL:
                if isPrintableASCII, Self.isPlainWebURL(raw) { return text }
                return Self.decoded(String(decoding: raw, as: UTF8.self), as: kind, into: &list)
            }
        }
        if end < bytes.count, bytes[end] < 0x20 { return nil }
        position = quote
        return string().map { Self.decoded($0, as: kind, into: &list) }
    }

    /// `string` kept aside in `list` as a text of `kind`, or absent when it is not one.
    private static func decoded(_ string: String, as kind: AppRecord.Field.Kind, into list: inout AppListText) -> AppListText.Text {
        switch kind {
        case .text: return list.decode(string)
        case .identifier: return Identifier.isValid(string) ? list.decode(string) : .absent
        case .webURL: return AppRecord.webURL(string).map { list.decode($0.absoluteString) } ?? .absent
        }
    }

    /// Whether `text` is an http(s) URL of a shape that Foundation's `URL(string:)` takes with a host
    /// and gives back unchanged as `absoluteString`: `http://` or `https://` in lower case, a host of
    /// dot-separated labels of letters, digits and `-`, an optional port of up to 5 digits, then a path,
    /// query and fragment of RFC 3986's unreserved characters, `!$&'()*+,;=:@/`, `?` after the path and
    /// `%` with two hex digits. Anything else goes to Foundation.
    static func isPlainWebURL(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = text.baseAddress, text.count >= 8, base[0] == UInt8(ascii: "h"), base[1] == UInt8(ascii: "t"),
              base[2] == UInt8(ascii: "t"), base[3] == UInt8(ascii: "p") else { return false }
        var index = base[4] == UInt8(ascii: "s") ? 5 : 4
        guard base[index] == UInt8(ascii: ":"), base[index + 1] == UInt8(ascii: "/"), base[index + 2] == UInt8(ascii: "/") else { return false }
        index += 3
        // The host.
        var labelLength = 0
        while index < text.count {
            let byte = base[index]
            if isIn(byte, low: hostBytesLow, high: hostBytesHigh) {
                labelLength += 1
            } else if byte == UInt8(ascii: ".") {
                guard labelLength > 0 else { return false }
                labelLength = 0
            } else {
                break
            }
            index += 1
        }
        guard labelLength > 0 else { return false }
        if index < text.count, base[index] == UInt8(ascii: ":") {
            index += 1
            let start = index
            while index < text.count, base[index] >= UInt8(ascii: "0"), base[index] <= UInt8(ascii: "9") { index += 1 }
            guard index > start, index - start <= 5 else { return false }
        }
        guard index == text.count || base[index] == UInt8(ascii: "/") || base[index] == UInt8(ascii: "?") || base[index] == UInt8(ascii: "#") else { return false }
        // The path, then the query after `?`, then the fragment after `#`.
        var inFragment = false
        while index < text.count {
            let byte = base[index]
            if !isIn(byte, low: pathBytesLow, high: pathBytesHigh) {
                switch byte {
                case UInt8(ascii: "%"):
                    guard text.count - index > 2, isHexDigit(base[index + 1]), isHexDigit(base[index + 2]) else { return false }
                    index += 2
                case UInt8(ascii: "?"):
                    break
                case UInt8(ascii: "#"):
                    guard !inFragment else { return false }
                    inFragment = true
                default:
                    return false
                }
            }
            index += 1
        }
        return true
    }

    /// Bit masks of bytes 0-63 and 64-127: a host label's (letters, digits, `-`), and a path's, query's
    /// or fragment's (RFC 3986's unreserved, `!$&'()*+,;=:@/`).
    private static let hostBytesLow: UInt64 = 0x03FF_2000_0000_0000
    private static let hostBytesHigh: UInt64 = 0x07FF_FFFE_07FF_FFFE
    private static let pathBytesLow: UInt64 = 0x2FFF_FFD2_0000_0000
    private static let pathBytesHigh: UInt64 = 0x47FF_FFFE_87FF_FFFF

    private static func isIn(_ byte: UInt8, low: UInt64, high: UInt64) -> Bool {
        byte < 64 ? low & (1 << UInt64(byte)) != 0 : byte < 128 && high & (1 << UInt64(byte - 64)) != 0
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || (byte | 0x20 >= UInt8(ascii: "a") && byte | 0x20 <= UInt8(ascii: "f"))
    }
}

/// UTF-8 validation without making a string: what `String(validating:as:)` accepts (Unicode's table
/// of well-formed byte sequences: no overlong forms, no surrogates, nothing past U+10FFFF).
package enum UTF8Validation {
    package static func isValid(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = 0
        let count = bytes.count
        func continuation(_ offset: Int, _ low: UInt8 = 0x80, _ high: UInt8 = 0xBF) -> Bool {
            index + offset < count && bytes[index + offset] >= low && bytes[index + offset] <= high
        }
        while index < count {
            let lead = bytes[index]
            switch lead {
            case 0x00...0x7F:
                index += 1
            case 0xC2...0xDF:
                guard continuation(1) else { return false }
                index += 2
            case 0xE0:
                guard continuation(1, 0xA0), continuation(2) else { return false }
                index += 3
            case 0xE1...0xEC, 0xEE...0xEF:
                guard continuation(1), continuation(2) else { return false }
                index += 3
            case 0xED:
                guard continuation(1, 0x80, 0x9F), continuation(2) else { return false }
                index += 3
            case 0xF0:
                guard continuation(1, 0x90), continuation(2), continuation(3) else { return false }
                index += 4
            case 0xF1...0xF3:
                guard continuation(1), continuation(2), continuation(3) else { return false }
                index += 4
            case 0xF4:
                guard continuation(1, 0x80, 0x8F), continuation(2), continuation(3) else { return false }
                index += 4
            default:
                return false
            }
        }
        return true
    }
}
