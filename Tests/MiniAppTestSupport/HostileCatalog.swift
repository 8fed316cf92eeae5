import Foundation

/// A platform's list of `count` apps as JSON text, the same every time: most records ordinary, the rest
/// hostile (optional fields of the wrong type, control characters and escapes, huge strings, URLs that
/// are not http(s) or do not parse, duplicate and unknown keys, and records with a bad id or version,
/// which are dropped).
public enum HostileCatalog {
    public static func json(count: Int) -> [UInt8] {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        let texts = [
            #""App number""#, #""Caf\u00e9 \ud83d\ude00 e\u0301 \u6f22\u5b57""#, #""tab\there\nnew line""#,
            "\"raw \u{1B}[31mred\u{1B}[0m \u{7F} \u{85} \u{2028} \u{9B}2J\"", #""esc \u001b[2J \u0000 \u0007 \u007f \u0085 \u2028""#,
            #""quote \" backslash \\ slash \/ /""#, #""bs \b ff \f cr \r vt \u000b us \u001f ps \u2029 nbsp \u00a0 shy \u00ad bom \ufeff""#, "\"emoji 👩‍👩‍👧 flags 🇯🇵 combining a\u{0301}\u{0302}\"", #""""#,
            "12", "true", "null", "{\"a\": 1}", "[\"x\"]", "3.5e2",
        ]
        let urls = [
            #""https://cdn.example/icon.png""#, #""http://cdn.example/a/b?c=d#e""#, #""HTTPS://CDN.EXAMPLE/UP.png""#,
            #""ftp://cdn.example/x""#, #""/relative/icon.png""#, #""https://""#, #""https://cdn.example/with space.png""#,
            #""https://bücher.example/ü.png""#, #""javascript:alert(1)""#, #""https://cdn.example/\u001b[31m""#,
            #""https:\/\/cdn.example\/escaped.png""#, "7", "null", "[]", #""""#, #""http://[::1]:8080/x""#,
        ]
        let tags = [#""1.0.0""#, #""2.0.0-beta+7""#, "null", "3", #""\u001b]0;title\u0007""#, "{}", #""""#]
        var out = "[\n"
        for index in 0..<count {
            let id = String(format: "app-%05d", index)
            var fields: [String] = []
            let kind = next(100)
            switch kind {
            case 0: fields.append(#""id": "../escape""#)
            case 1: fields.append(#""id": 42"#)
            case 2: break
            default: fields.append("\"id\": \"\(id)\"")
            }
            if next(10) > 0 { fields.append("\"displayName\": " + (next(3) == 0 ? texts[next(texts.count)] : "\"App \(index)\"")) }
            if next(4) > 0 { fields.append("\"icon\": " + urls[next(urls.count)]) }
            if next(3) == 0 { fields.append("\"promotionalImageUrl\": " + urls[next(urls.count)]) }
            if next(3) == 0 { fields.append("\"promotionalText\": " + texts[next(texts.count)]) }
            if index % 2_500 == 7 { fields.append("\"promotionalText\": \"" + String(repeating: "huge \\u0007 text ", count: 12_000) + "\"") }
            if index % 3_000 == 11 { fields.append("\"displayName\": \"" + String(repeating: "W", count: 150_000) + "\"") }
            switch next(60) {
            case 0: fields.append(#""version": {"versionId": "bad/id", "versionTag": "1"}"#)
            case 1: fields.append(#""version": "v1""#)
            case 2: break
            case 3: fields.append(#""version": {"versionTag": "1"}"#)
            default: fields.append("\"version\": {\"versionId\": \"v\(index % 97)\", \"versionTag\": \(tags[next(tags.count)]), \"extra\": [1, {\"deep\": [null]}]}")
            }
            if next(20) == 0 { fields.append(#""displayName": "a duplicate key (the first wins)""#) }
            if next(20) == 0 { fields.append(#""unknown": {"nested": [1, 2.5e-3, -0, "\ud834\udd1e", false]}"#) }
            out += "  {" + fields.joined(separator: next(2) == 0 ? ", " : ",\n    ") + "}" + (index == count - 1 ? "\n" : ",\n")
        }
        return Array((out + "]\n").utf8)
    }
}
