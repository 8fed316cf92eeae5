import Foundation
import Logging
package import MiniAppCore

/// A TUF repository over HTTP: metadata files under one base URL, targets under another, each fetched
/// with the library's request policy (redirects, retries of `5xx` and `429`, the time budget). A `403`
/// or `404` is a file the repository does not have; reading stops at the first byte past the limit.
struct TUFHTTPRemote: TUFRemote {
    let metadataBase: String
    let targetsBase: String
    let transport: HTTPTransport
    let policy: RequestPolicy

    /// A remote for the metadata at `metadataURL` and the targets at `targetsURL` (a `/` is added to
    /// either when it does not end with one).
    init(metadataURL: String, targetsURL: String, transport: HTTPTransport, logger: Logger) {
        metadataBase = metadataURL.hasSuffix("/") ? metadataURL : metadataURL + "/"
        targetsBase = targetsURL.hasSuffix("/") ? targetsURL : targetsURL + "/"
        self.transport = transport
        policy = RequestPolicy(network: transport.network, logger: logger)
    }

    func metadata(_ name: String, limit: Int) async throws -> [UInt8]? {
        try await get(metadataBase + name, limit: limit)
    }

    func target(_ path: String, limit: Int) async throws -> [UInt8]? {
        // A target path is a path: each segment as it is, but for what a URL cannot carry.
        let encoded = path.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? path
        return try await get(targetsBase + encoded, limit: limit)
    }

    private func get(_ url: String, limit: Int) async throws -> [UInt8]? {
        let deadline = policy.deadline()
        var redirects = 0
        return try await policy.retrying(url, deadline: deadline) { _ -> RequestPolicy.Attempt<[UInt8]?> in
            let (response, _) = try await policy.send(HTTPRequest(url: url), over: transport, deadline: deadline, redirects: &redirects)
            defer { response.close() }
            switch RequestPolicy.verdict(response.status, headers: response.headers) {
            case .success:
                break
            case .rateLimited(let wait):
                return .retry(TUFFetchError(url: url, status: response.status), retryAfter: wait)
            case .transient:
                return .retry(TUFFetchError(url: url, status: response.status))
            case .other:
                if response.status == 403 || response.status == 404 { return .done(nil) }
                throw TUFFetchError(url: url, status: response.status)
            }
            guard let bytes = try await response.collect(upTo: limit, executor: transport.executor) else { throw TUFTooLong(limit: limit) }
            return .done(bytes)
        }
    }
}

/// A TUF repository answered with a status that is neither the file nor its absence.
struct TUFFetchError: Error, CustomStringConvertible {
    let url: String
    let status: Int

    var description: String { "\(url) answered HTTP \(status)" }
}

extension MiniAppRuntime {
    /// A TUF updater over the metadata kept in `folder` (its `root.json` the trusted root) and the
    /// repository at `metadataURL` and `targetsURL`, reached through the runtime's one transport.
    package func tufUpdater(folder: String, metadataURL: String, targetsURL: String, limits: TUFLimits = TUFLimits()) async throws -> TUFUpdater {
        let remote = TUFHTTPRemote(metadataURL: metadataURL, targetsURL: targetsURL, transport: sharedTransport(), logger: logger)
        return try await TUFUpdater(folder: folder, remote: remote, executor: executor, limits: limits)
    }
}
