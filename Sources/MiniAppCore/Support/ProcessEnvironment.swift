package import Foundation
internal import CMiniAppSystem

/// The process's environment, current folder and processor count, read straight from the C library.
///
/// Foundation's `ProcessInfo` answers the same, but its first use costs about a quarter of a
/// millisecond, a sizeable part of a warm `download`.
@usableFromInline
package enum ProcessEnvironment {
    /// The environment variables a ``ConfigurationLoader`` reads: `HOME`, `XDG_*`, `MINIAPP_*` and
    /// `PGPASSWORD` (for a PostgreSQL permission store whose URL has no password); of
    /// duplicate names the first wins, as with `getenv`.
    @usableFromInline
    package static func variables() -> [String: String] {
        var variables: [String: String] = [:]
        guard var entry = CMiniAppSystem_environment() else { return variables }
        while let pair = entry.pointee {
            entry += 1
            guard isConfiguration(pair) else { continue }
            let text = String(cString: pair)
            if let equals = text.utf8.firstIndex(of: UInt8(ascii: "=")) {
                let name = String(text[..<equals])
                if variables[name] == nil { variables[name] = String(text[text.index(after: equals)...]) }
            }
        }
        return variables
    }

    /// Whether the `NAME=value` C string names a variable the configuration reads.
    private static func isConfiguration(_ pair: UnsafePointer<CChar>) -> Bool {
        for prefix in ["MINIAPP_", "XDG_", "HOME=", "PGPASSWORD="] where strncmp(pair, prefix, prefix.utf8.count) == 0 {
            return true
        }
        return false
    }

    /// The current folder, or `/` when it cannot be read (it was removed, or is too long).
    @usableFromInline
    package static func currentDirectory() -> String {
        guard let path = getcwd(nil, 0) else { return "/" }
        defer { free(path) }
        return String(cString: path)
    }

    /// The processors this process may run on, at least 1.
    @usableFromInline
    package static let processorCount = Int(CMiniAppSystem_processorCount())
}

extension ProcessEnvironment {
    /// The name of the process's effective user (what libpq takes as the default database user), or an
    /// empty string when the user database has no entry.
    package static func userName() -> String {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(geteuid(), &entry, &buffer, buffer.count, &result) == 0, result != nil, let name = entry.pw_name else { return "" }
        return String(cString: name)
    }

    /// The process's file mode creation mask now, from `/proc/self/status` (reading it with `umask()`
    /// would change it for a moment under other threads); `nil` when it cannot be read.
    package static var fileCreationMask: mode_t? {
        guard let status = FileReading.contents("/proc/self/status") else { return nil }
        for line in String(decoding: status, as: UTF8.self).split(separator: "\n") where line.hasPrefix("Umask:") {
            return mode_t(line.dropFirst(6).trimmingCharacters(in: .whitespaces), radix: 8)
        }
        return nil
    }

    /// The modes among `modes` that files and folders created with them get exactly, with the mask as
    /// it is now, so that no `chmod` is needed afterwards.
    package static func exactModes(_ modes: [mode_t]) -> Set<mode_t> {
        guard let mask = fileCreationMask else { return [] }
        return Set(modes.filter { $0 & ~mask == $0 })
    }
}
