import Foundation
import MiniAppTestSupport
import Testing

@testable import MiniAppCore

/// TUF's canonical JSON, byte for byte as the reference implementation (securesystemslib's
/// `encode_canonical`, under python-tuf) writes it, on generated documents.
@Suite struct CanonicalJSONTests {
    /// Documents made from a seeded generator: nested objects and arrays, keys that sort differently by
    /// code point and by other orders, strings with quotes, backslashes, controls and non-ASCII text.
    static func documents(count: Int) -> [JSONValue] {
        var state: UInt64 = 0x2545_F491_4F6C_DD1D
        func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        let texts = ["", "a", "B", "_", "é", "Z", "\u{1F600}", "tab\there", "quote\"", "back\\slash", "new\nline", "\u{7F}", "\u{E9}t\u{E9}", "e\u{301}", "keyid", "sig", "ÿ", "\u{0}"]
        func value(_ depth: Int) -> JSONValue {
            switch next(depth > 3 ? 5 : 7) {
            case 0: return .null
            case 1: return .bool(next(2) == 0)
            case 2: return .number(Double([0, 1, -1, 42, 1_700_000_000, 9_007_199_254_740_992, -9_007_199_254_740_992][next(7)]))
            case 3, 4: return .string(texts[next(texts.count)] + texts[next(texts.count)])
            case 5: return .array((0..<next(4)).map { _ in value(depth + 1) })
            default:
                var members: [String: JSONValue] = [:]
                for _ in 0..<next(5) { members[texts[next(texts.count)] + texts[next(texts.count)]] = value(depth + 1) }
                return .object(members)
            }
        }
        return (0..<count).map { _ in .object(["signed": value(0)]) }
    }

    @Test func everyDocumentIsWrittenAsTheReferenceWritesIt() async throws {
        let documents = Self.documents(count: 400)
        let folder = try TemporaryDirectory.make()
        let input = folder.appendingPathComponent("documents.json").path
        try writeTestFile(input, JSONEncoder().encode(documents))
        let reference = try await PythonTUF.run("""
            import json, sys
            from securesystemslib.formats import encode_canonical
            for document in json.load(open(sys.argv[1], encoding="utf-8")):
                print(encode_canonical(document).encode("utf-8").hex())
            """, [input])
        let expected = reference.split(separator: "\n").map(String.init)
        #expect(expected.count == documents.count)
        var mismatches = 0
        for (document, hex) in zip(documents, expected) {
            let ours = try #require(CanonicalJSON.encode(document))
            if ours.map({ String(format: "%02x", $0) }).joined() != hex { mismatches += 1 }
        }
        #expect(mismatches == 0, "\(mismatches) of \(documents.count) documents differ from securesystemslib's canonical form")
    }

    @Test func numbersThatAreNotIntegersHaveNoCanonicalForm() {
        #expect(CanonicalJSON.encode(.number(1.5)) == nil)
        #expect(CanonicalJSON.encode(.array([.number(9_007_199_254_740_994)])) == nil)
        #expect(CanonicalJSON.encode(.object(["b": .number(2), "a": .string("x")])) == Array(#"{"a":"x","b":2}"#.utf8))
    }
}
