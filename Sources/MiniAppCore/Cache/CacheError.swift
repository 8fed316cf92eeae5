import Foundation

/// A cache operation that failed.
public enum CacheError: CategorizedError, Equatable {
    /// Asked for a version from the cache alone, and it is not there.
    case notCached(appId: String, versionId: String?)
    /// Another process holds the version's lock and did not finish in time.
    case busy(appId: String, versionId: String, waitedSeconds: Int)
    /// A cached version is damaged and cannot be repaired now.
    case damaged(appId: String, versionId: String, problems: [String])
    /// A damaged cached version's kept zip failed its digest or signature check, so it cannot repair it.
    case keptZipRejected(appId: String, versionId: String, reason: String)
    /// Reading or writing the cache failed.
    case io(path: String, reason: String, diskFull: Bool)
    /// One of the cache's own folders is a symbolic link (`isLink`) or a file: the cache does not
    /// follow links it did not make.
    case notAFolder(path: String, isLink: Bool)
    /// A file the cache keeps about itself (`what`: an install record, the memory of an app's latest
    /// versions) exists and cannot be read: the cache does not pretend it is absent.
    case unreadable(path: String, what: String)

    public var category: ErrorCategory {
        switch self {
        case .notCached: return .notFound
        case .busy: return .busy
        case .damaged, .keptZipRejected, .unreadable: return .badData
        case .io, .notAFolder: return .localIO
        }
    }

    public var description: String {
        switch self {
        case .notCached(let appId, let versionId):
            let what = versionId.map { "version \($0) of app \(appId)" } ?? "app \(appId)"
            return "\(what) is not in the cache and the configuration is offline: turn offline off to fetch it"
        case .busy(let appId, let versionId, let waited):
            return "version \(versionId) of app \(appId) is locked by another process (waited \(waited) s): retry when it has finished, or allow a longer lock timeout"
        case .damaged(let appId, let versionId, let problems):
            let shown = problems.prefix(3).joined(separator: ", ") + (problems.count > 3 ? ", ..." : "")
            return "cached version \(versionId) of app \(appId) is damaged (\(shown)) and cannot be repaired offline: turn offline off to reinstall it"
        case .keptZipRejected(let appId, let versionId, let reason):
            return "cached version \(versionId) of app \(appId) is damaged and its kept zip cannot repair it (\(reason)): turn offline off to reinstall it"
        case .notAFolder(let path, let isLink):
            return "cache folder \(path) is \(isLink ? "a symbolic link" : "not a folder"), which the cache never follows: remove it (the cache makes a real folder again) and retry"
        case .io(let path, let reason, let diskFull):
            return "cannot write \(path): \(reason)\(diskFull ? "; free some disk space and retry" : "; check the cache directory and its permissions")"
        case .unreadable(let path, let what):
            return "\(what) at \(path) cannot be read: remove it (`miniapp cache verify` names every such file) and retry"
        }
    }

    /// The error for a failed system call on `path`, from `errno`.
    package static func system(_ path: String, errorNumber: Int32 = errno) -> CacheError {
        .io(path: path, reason: String(cString: strerror(errorNumber)), diskFull: errorNumber == ENOSPC || errorNumber == EDQUOT)
    }

    /// The error for a Foundation file operation that threw.
    package static func foundation(_ path: String, _ error: any Error) -> CacheError {
        let nsError = error as NSError
        let underlying = (nsError.userInfo[NSUnderlyingErrorKey] as? NSError)
        let code = Int32(underlying?.domain == NSPOSIXErrorDomain ? underlying!.code : (nsError.domain == NSPOSIXErrorDomain ? nsError.code : 0))
        if code != 0 { return system(path, errorNumber: code) }
        let diskFull = nsError.domain == NSCocoaErrorDomain && nsError.code == NSFileWriteOutOfSpaceError
        return .io(path: path, reason: nsError.localizedDescription, diskFull: diskFull)
    }
}
