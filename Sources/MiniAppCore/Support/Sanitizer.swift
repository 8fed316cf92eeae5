import Foundation

/// Makes untrusted text safe to show on one terminal line.
package enum Sanitizer {
    /// `text` with control characters replaced by `?`, cut to `limit` characters.
    package static func printable(_ text: String, limit: Int = 200) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            if result.unicodeScalars.count >= limit {
                result += "..."
                break
            }
            if scalar.properties.generalCategory == .control || scalar == "\u{2028}" || scalar == "\u{2029}" {
                result.unicodeScalars.append("?")
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// `text` made printable, with every occurrence of `secret` replaced by `***`.
    package static func redacting(_ secret: String?, in text: String, limit: Int = 200) -> String {
        guard let secret, !secret.isEmpty else { return printable(text, limit: limit) }
        let bare = secret.hasPrefix("ras-") ? String(secret.dropFirst(4)) : secret
        var cleaned = text.replacingOccurrences(of: secret, with: "***")
        if !bare.isEmpty { cleaned = cleaned.replacingOccurrences(of: bare, with: "***") }
        return printable(cleaned, limit: limit)
    }
}
