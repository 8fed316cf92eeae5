import Foundation
import MiniAppTestSupport
import Testing

@testable import MiniAppCore

/// ``AppListText`` must keep exactly the records, and the texts, that ``AppRecord/listElements(_:)``
/// makes: `list` prints from it.
@Suite struct AppListTextTests {
    /// The texts of `list`'s entries (as ``fields(_:)`` orders them), and its count of elements; `nil`
    /// when it refuses `document`.
    static func entries(_ document: [UInt8]) -> (entries: [[String?]], count: Int)? {
        guard let list = AppListText.read(Data(document)) else { return nil }
        let entries = list.withTexts { texts in
            list.entries.map { entry in
                AppRecord.fields.map { entry[$0] }.map { text -> String? in
                    guard let utf8 = texts.utf8(text) else { return nil }
                    // Every text is valid UTF-8 and says truly whether it needs no escape.
                    #expect(text.isPlain == utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") })
                    return String(validating: utf8, as: UTF8.self) ?? "invalid UTF-8"
                }
            }
        }
        return (entries, list.elementCount)
    }

    /// A record's texts as `list` prints them.
    static func fields(_ record: AppRecord) -> [String?] {
        [record.displayName, record.icon?.absoluteString, record.id, record.promotionalImageUrl?.absoluteString, record.promotionalText,
         record.version.versionId, record.version.versionTag]
    }

    /// `document` read both ways: the same documents taken, the same records with the same texts.
    static func expectSame(_ document: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
        let elements = AppRecord.listElements(document)
        let read = entries(document)
        #expect((read == nil) == (elements == nil), "\(String(decoding: document, as: UTF8.self))", sourceLocation: sourceLocation)
        guard let elements, let read else { return }
        #expect(read.count == elements.count, sourceLocation: sourceLocation)
        #expect(read.entries == elements.compactMap { $0 }.map(fields), sourceLocation: sourceLocation)
    }

    @Test(arguments: [
        #"[{"id": "a", "version": {"versionId": "v"}}, {"id": "../b", "version": {"versionId": "v"}}, 3, null, "x"]"#,
        #"[{"id": "a", "id": "b", "displayName": 5, "displayName": "dup", "version": {"versionId": "v", "versionTag": ["x"]}}]"#,
        #"[{"id": "a", "version": {"versionId": "v"}, "icon": "HTTPS://X.EXAMPLE/a b", "promotionalImageUrl": "ftp://x/y"}]"#,
        #"[{"id": "a", "version": {"versionId": "v"}, "promotionalText": "\ud83d\ude00 \u0000 \/"}]"#,
        #"[{"id": "a", "version": {"versionId": "v"}},]"#,
        #"[{"id": "a", "version": {"versionId": "v"}, "n": 1e999}]"#,
        #"[{"id": "a", "version": {"versionId": "v"}, "s": "\ud800"}]"#,
        #"{"id": "a"}"#, "", "[]", " [ ] ", "[", "[{",
        #"[{"\u0069d": "a", "v\u0065rsion": {"versionId": "v"}}, {"id\n": "b", "version": {"versionId": "v"}}]"#,
        #"[{"id": "a", "version": "v1", "version": {"versionId": "v"}}, {"id": "b", "version": {"versionId": 1, "versionId": "v"}}]"#,
        #"[{"id": "a", "version": {"versionId": "v", "versionTag": "1", "versionTag": 2, "x": {}}, "icon": null, "icon": "https://x.example/"}]"#,
        #"[{}, [], {"id": "a"}, {"version": {"versionId": "v"}}, {"id": "a", "version": {}}]"#,
        #"[{"id": "a\u002db", "version": {"versionId": "v\u0031"}}, {"id": ".a", "version": {"versionId": "v"}}, {"id": "a", "version": {"versionId": ""}}]"#,
        #"[{"id": "a", "version": {"versionId": "v"}, "icon": "https:\/\/x.example\/a.png", "displayName": "caf\u00e9 \u007f \u0085"}]"#,
        #"[{"id": "a", "version": {"versionId": "v"}, "k\u0000": 1, "x": "\u00"}]"#,
        #"[{"id": "a" "version": {"versionId": "v"}}]"#,
        "[{\"id\": \"a\", \"version\": {\"versionId\": \"v\"}, \"tab\tkey\": 1}]",
        "[{\"id\": \"a\", \"version\": {\"versionId\": \"v\"}, \"displayName\": \"DEL \u{7F} C1 \u{85} caf\u{E9} 漢字 \u{1F600}\"}]",
    ])
    func readsWhatTheRecordReaderReads(document: String) {
        Self.expectSame(Array(document.utf8))
    }

    @Test func aListWithHostileRecords() {
        Self.expectSame(HostileCatalog.json(count: 3_000))
    }

    /// A long list is read in two halves on two threads: the same records, texts (decoded ones
    /// included, from both halves) and verdicts as one pass, whole, cut short, or spoiled in either half.
    @Test func aLongListReadInTwoHalves() throws {
        let document = HostileCatalog.json(count: 3_000)
        #expect(document.count >= AppListText.splitMinimumBytes)
        let split = try #require(document.withUnsafeBufferPointer { AppListText.splitCandidate($0) })
        #expect(split > document.count / 2)
        Self.expectSame(document)
        // Cut short, or given one bad byte, in the first half, at the guess, and in the second half.
        for place in [document.count / 4, split - 1, split, split + 1, document.count * 3 / 4, document.count - 2] {
            Self.expectSame(Array(document[..<place]))
            for bad in [UInt8(ascii: "}"), UInt8(ascii: "\""), 0xFF, UInt8(ascii: ",")] {
                var spoiled = document
                spoiled[place] = bad
                Self.expectSame(spoiled)
            }
        }
        Self.expectSame(document + Array(" \n\t".utf8))
        Self.expectSame(document + Array(" x".utf8))
        Self.expectSame(Array(document.dropLast(2)) + Array(",]".utf8))
    }

    /// When the guessed start of the second half lies inside a string (here a text that looks like
    /// records), reading from the start does not land on it: the guess is dropped, and the list is
    /// read as in one pass.
    @Test func aGuessInsideAStringIsDropped() throws {
        let fake = String(repeating: #", {\"id\": \"fake\", \"version\": {\"versionId\": \"v\"}}"#, count: 12_000)
        let record = #"{"id": "real", "version": {"versionId": "v"}, "displayName": "\#(fake)"}"#
        let small = #"{"id": "small", "version": {"versionId": "v"}}"#
        let document = Array("[\(record), \(small)]".utf8)
        #expect(document.count >= AppListText.splitMinimumBytes)
        let split = try #require(document.withUnsafeBufferPointer { AppListText.splitCandidate($0) })
        #expect(split < record.utf8.count, "the guess falls inside the first record's name")
        Self.expectSame(document)
        #expect(Self.entries(document)?.entries.count == 2)
    }

    @Test func invalidUTF8AnywhereIsRefused() {
        for bytes in [[0xFF], [0xC3], [0xED, 0xA0, 0x80], [0xC0, 0xAF], [0xF4, 0x90, 0x80, 0x80]] as [[UInt8]] {
            for member in ["displayName", "unknown", "id"] {
                let document = Array(#"[{"id": "a", "version": {"versionId": "v"}, "\#(member)": ""#.utf8) + bytes + Array(#""}]"#.utf8)
                #expect(AppListText.read(Data(document)) == nil)
                #expect(AppRecord.listElements(document) == nil)
            }
        }
    }

    /// Texts of every length around the eight-byte steps of the scan, with the byte that ends or marks
    /// them at every place: the same texts and printable flags as the record reader's strings.
    @Test func textsAroundEveryWordBoundary() {
        let marks: [[UInt8]] = [[0x7E], [0x7F], [0x20], [0xC3, 0xA9], [0xC2, 0x85], Array(#"\""#.utf8), Array(#"\\"#.utf8), Array(#"\u0041"#.utf8), [0x09], [0x1F]]
        for length in 0..<20 {
            for place in 0...length {
                for mark in marks {
                    var text = [UInt8](repeating: UInt8(ascii: "x"), count: length)
                    text.insert(contentsOf: mark, at: place)
                    let document = Array(#"[{"id": "a", "version": {"versionId": "v"}, "displayName": ""#.utf8) + text + Array(#""}]"#.utf8)
                    Self.expectSame(document)
                }
            }
        }
    }

    /// Many URL-like texts, most of them near the shapes the reader keeps in place: it keeps one only
    /// when Foundation's `URL` takes it with a host and gives it back unchanged.
    @Test func urlsAgreeWithFoundation() {
        var random = SeededRandom(state: 0x2545_F491_4F6C_DD1D)
        func next(_ bound: Int) -> Int { random.next(bound) }
        let schemes = ["https://", "http://", "HTTP://", "https:", "https:/", "http:///", "hTtps://", "ftp://", ""]
        let hostBytes = Array("abcXYZ019-._~%:@[]!$&'()*+,;= ".utf8)
        let pathBytes = Array("abcXYZ019-._~%:@/?#[]!$&'()*+,;= \"<>\\^`{|}".utf8) + [0x7F]
        var urls: [String] = [
            "https://cdn.example/app.png", "http://127.0.0.1:8080/x?y=1#z", "https://a/", "https://a", "https://a.", "https://.a",
            "https://a..b/", "https://-a-/", "https://a:/", "https://a:65535/", "https://a:99999/", "https://a:123456/",
            "https://a/%41%zz", "https://a/%4", "https://a/b#c#d", "https://a/b?c?d#e?f", "https://a/~user/(x)*!$&'+,;=:@",
            "https://a/é", "https://a b/", "https://[::1]/", "https://user@a/", "https://a/b c",
        ]
        for _ in 0..<4000 {
            var url = schemes[next(schemes.count)]
            for _ in 0..<next(12) { url.append(Character(Unicode.Scalar(hostBytes[next(hostBytes.count)]))) }
            if next(4) == 0 { url += ":" + String(next(200_000)) }
            for _ in 0..<next(16) { url.append(Character(Unicode.Scalar(pathBytes[next(pathBytes.count)]))) }
            urls.append(url)
        }
        for url in urls {
            let escaped = String(decoding: try! JSONEncoder().encode(url), as: UTF8.self)
            let document = Array(#"[{"id": "a", "version": {"versionId": "v"}, "icon": \#(escaped), "promotionalImageUrl": \#(escaped)}]"#.utf8)
            Self.expectSame(document)
        }
    }

    @Test func utf8ValidationAgreesWithTheStandardLibrary() {
        var random = SeededRandom(state: 0x9E37_79B9_7F4A_7C15)
        func next(_ bound: Int) -> Int { random.next(bound) }
        let interesting: [UInt8] = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF]
        for _ in 0..<50_000 {
            let bytes = (0..<next(7)).map { _ in next(3) == 0 ? UInt8(next(256)) : interesting[next(interesting.count)] }
            let valid = bytes.withUnsafeBufferPointer { UTF8Validation.isValid($0) }
            #expect(valid == (String(validating: bytes, as: UTF8.self) != nil), "\(bytes)")
        }
    }
}

/// The same numbers every run (a linear congruential generator).
private struct SeededRandom {
    var state: UInt64

    /// A number in `0..<bound`.
    mutating func next(_ bound: Int) -> Int {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Int((state >> 33) % UInt64(bound))
    }
}

/// ``AppRecord/fields`` is the one list of a record's fields: every form reads and writes each of them.
@Suite struct AppRecordFieldTests {
    @Test func eachFieldHasItsSlotInAnEntry() {
        #expect(AppRecord.fields.count == AppListText.Entry.capacity)
        for (index, field) in AppRecord.fields.enumerated() { #expect(field.slot == index, "\(field.key)") }
        #expect(AppRecord.recordFields.map(\.key) == AppRecord.recordFields.map(\.key).sorted())
    }

    @Test func everyFormReadsAndWritesEveryField() throws {
        let record = AppRecord(
            id: "app-1", displayName: "Name", icon: URL(string: "https://cdn.example/icon.png"), version: AppVersion(versionId: "v-1", versionTag: "1.0.0"),
            promotionalImageUrl: URL(string: "https://cdn.example/promo.png"), promotionalText: "Try it"
        )
        // The sample sets every field: a field added to the list without a value here fails.
        for field in AppRecord.fields { #expect(field.text(record) != nil, "the sample has no \(field.key)") }
        let json = try JSONEncoder().encode([record])
        let object = try #require(try JSONSerialization.jsonObject(with: json) as? [[String: Any]]).first
        for field in AppRecord.fields {
            let holder = field.inVersion ? object?[AppRecord.Field.versionKey] as? [String: Any] : object
            #expect(holder?[field.key] as? String == field.text(record), "Codable wrote \(field.key) elsewhere")
        }
        #expect(try JSONDecoder().decode([AppRecord].self, from: json) == [record])
        #expect(AppRecord.listElements(Array(json)) == [record])
        let list = try #require(AppListText.read(json))
        #expect(list.entries.count == 1)
        list.withTexts { texts in
            for field in AppRecord.fields { #expect(texts.string(list.entries[0][field]) == field.text(record), "\(field.key)") }
        }
        let kept = AppListText(records: [record])
        kept.withTexts { texts in
            for field in AppRecord.fields { #expect(texts.string(kept.entries[0][field]) == field.text(record), "\(field.key)") }
        }
    }
}
