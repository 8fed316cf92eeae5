import Foundation
internal import CMiniAppSystem

/// The calling thread's character set made UTF-8 while libarchive reads or writes names.
///
/// libarchive converts entry names between an archive's charset and the current locale's. Under the
/// C locale, which a process has unless it calls `setlocale`, a name flagged as UTF-8 that is not plain
/// ASCII "cannot be converted", and the archive was refused; a name written is stored unflagged, so
/// other tools read it as CP437. The locale is set per thread (`uselocale`), so a host's own locale is
/// left alone.
enum UTF8Locale {
    /// Runs `body` with the thread's character type locale UTF-8 (unchanged when the system has no
    /// UTF-8 locale), then puts the thread's locale back.
    package static func run<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        guard let locale = CMiniAppSystem_utf8Locale() else { return try body() }
        let previous = uselocale(locale)
        defer { uselocale(previous) }
        return try body()
    }
}
