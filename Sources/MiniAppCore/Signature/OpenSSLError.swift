internal import CMiniAppOpenSSL

/// Reads and clears OpenSSL's per-thread error queue; call it right after a failing call, before any `await`.
enum OpenSSLError {
    /// The queued errors as one line, and the queue emptied.
    package static func drain() -> String {
        var messages: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            messages.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return messages.isEmpty ? "unknown OpenSSL failure" : messages.joined(separator: "; ")
    }
}
