import AsyncHTTPClient
import Foundation
import Logging
import MiniAppCore

@testable import MiniAppKit

// Ways in for unit tests of one part: in the library only `MiniAppRuntime` builds a transport, a
// platform client or an installer; these build one of them alone, with a transport of its own.

extension PlatformClient {
    /// A client for the platform at `baseURL`, over a transport of its own that ``shutdown()`` closes.
    convenience init(
        baseURL: URL, projectId: String, subscriptionKey: String? = nil, preview: Bool = false,
        network: NetworkSettings = NetworkSettings(), httpClient: HTTPClient? = nil, executor: BlockingExecutor, connections: PlatformConnections = .pooled,
        logger: Logger = Logger(label: "miniapp", factory: { _ in SwiftLogNoOpLogHandler() })
    ) {
        self.init(
            baseURL: baseURL, projectId: projectId, subscriptionKey: subscriptionKey, preview: preview, network: network,
            transport: HTTPTransport(network: network, httpClient: httpClient, executor: executor, connections: connections), ownsTransport: true,
            logger: logger
        )
    }

    /// A client for the remote platform that `configuration` names, over a transport of its own.
    convenience init(
        configuration: MiniAppConfiguration, httpClient: HTTPClient? = nil, executor: BlockingExecutor, connections: PlatformConnections = .pooled
    ) throws(ConfigurationError) {
        try self.init(
            configuration: configuration,
            transport: HTTPTransport(network: configuration.network, httpClient: httpClient, executor: executor, connections: connections),
            ownsTransport: true, logger: Logger(label: "miniapp", factory: { _ in SwiftLogNoOpLogHandler() })
        )
    }
}
