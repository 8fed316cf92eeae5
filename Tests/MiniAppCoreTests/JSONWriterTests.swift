import Foundation
import MiniAppTestSupport
import Testing

@testable import MiniAppCore

/// The one JSON writer, each escaping held to what reads or writes the same text elsewhere.
@Suite struct JSONWriterTests {
    /// Characters that each escaping treats in its own way, and plain ones around them.
    static let pool: [Character] = [
        "a", "Z", "0", " ", "/", "\"", "\\", "<", ">", "&", "'", "\u{0}", "\u{1}", "\u{8}", "\u{9}", "\u{A}", "\u{C}", "\u{D}",
        "\u{1F}", "\u{7F}", "\u{80}", "\u{85}", "\u{9F}", "\u{A0}", "é", "\u{2028}", "\u{2029}", "\u{2027}", "日", "😀", "\r\n",
    ]

    /// Texts of up to 12 characters from ``pool``, the same every run.
    static func texts(_ count: Int) -> [String] {
        var generator = SeededGenerator(seed: 0x5EED)
        return (0..<count).map { _ in String((0..<Int.random(in: 0...12, using: &generator)).map { _ in pool.randomElement(using: &generator)! }) }
    }

    static func written(_ text: String, _ escaping: JSONWriter.Escaping) -> String {
        var out: [UInt8] = []
        JSONWriter.string(text, escaping, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    static func decoded(_ json: String) throws -> String? {
        try JSONSerialization.jsonObject(with: Data(json.utf8), options: .fragmentsAllowed) as? String
    }

    @Test func theConsoleEscapingIsJSONEncodersWithDELAndC1Escaped() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .withoutEscapingSlashes
        for text in Self.texts(3000) {
            var expected = ""
            for scalar in String(decoding: try encoder.encode(text), as: UTF8.self).unicodeScalars {
                if scalar.value == 0x7F || (0x80...0x9F).contains(scalar.value) {
                    expected += String(format: "\\u%04x", scalar.value)
                } else {
                    expected.unicodeScalars.append(scalar)
                }
            }
            #expect(Self.written(text, .console) == expected, "\(text.debugDescription)")
        }
    }

    @Test func theEmbeddableEscapingReadsBackAndCannotEndAScriptOrALine() throws {
        for text in Self.texts(3000) {
            let json = Self.written(text, .embeddable)
            #expect(try Self.decoded(json) == text, "\(text.debugDescription) -> \(json)")
            let inner = json.unicodeScalars.dropFirst().dropLast()
            #expect(!inner.contains { ["<", ">", "&", "\u{2028}", "\u{2029}", "\u{7F}"].contains($0) || $0.value < 0x20 }, "\(json)")
        }
        #expect(JSONWriter.text(.object(["b": .array([.number(1), .number(0.5), .bool(true), .null]), "a": .string("</script>")])) == #"{"a":"\u003c/script\u003e","b":[1,0.5,true,null]}"#)
        #expect(JSONWriter.text(ordered: [("z", .string("1")), ("a", .array([.bool(false)]))]) == #"{"z":"1","a":[false]}"#)
    }

    @Test func theCanonicalEscapingsWriteOnlyWhatCanonicalJSONEscapes() throws {
        for text in Self.texts(3000) {
            let raw = Self.written(text, .canonical)
            let escaped = text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            #expect(raw == "\"" + escaped + "\"")
            let controls = Self.written(text, .canonicalEscapingControls)
            #expect(try Self.decoded(controls) == text, "\(text.debugDescription) -> \(controls)")
            #expect(!controls.unicodeScalars.contains { $0.value < 0x20 })
        }
    }
}
