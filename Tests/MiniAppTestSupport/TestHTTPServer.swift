import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// A request the test server received.
public struct RecordedRequest: Sendable {
    public var method: String
    /// The request target as sent, path and query.
    public var uri: String
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    /// The path without the query.
    public var path: String { String(uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]) }

    /// The query items, decoded.
    public var query: [String: String] {
        guard let components = URLComponents(string: uri) else { return [:] }
        return Dictionary((components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { first, _ in first })
    }

    /// The first value of a header, by case-insensitive name.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

/// What the test server does with one request.
public struct StubResponse: Sendable {
    public enum Action: Sendable {
        /// Send the whole answer.
        case respond
        /// Close the connection without answering.
        case drop
        /// Never answer.
        case stall
        /// Send the head and this many body bytes, then close.
        case truncate(Int)
        /// Send the head and this many body bytes, then never send more.
        case partialThenStall(Int)
    }

    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]
    public var delay: Duration?
    public var action: Action

    public init(status: Int = 200, headers: [(String, String)] = [], body: [UInt8] = [], delay: Duration? = nil, action: Action = .respond) {
        self.status = status
        self.headers = headers
        self.body = body
        self.delay = delay
        self.action = action
    }

    /// A JSON answer with the given status and text.
    public static func json(_ text: String, status: Int = 200, headers: [(String, String)] = []) -> StubResponse {
        StubResponse(status: status, headers: [("Content-Type", "application/json")] + headers, body: Array(text.utf8))
    }

    /// A JSON answer with the given status and value, serialized.
    public static func json(value: Any, status: Int = 200, headers: [(String, String)] = []) -> StubResponse {
        let data = try! JSONSerialization.data(withJSONObject: value, options: [.sortedKeys])
        return StubResponse(status: status, headers: [("Content-Type", "application/json")] + headers, body: Array(data))
    }

    /// The `{"code": status, "message": text}` error body of the platform API.
    public static func error(_ status: Int, _ message: String = "error", headers: [(String, String)] = []) -> StubResponse {
        json(value: ["code": status, "message": message], status: status, headers: headers)
    }
}

/// A real HTTP/1.1 server on 127.0.0.1 whose answers a test scripts request by request.
public final class TestHTTPServer: Sendable {
    public typealias Handler = @Sendable (RecordedRequest) async -> StubResponse

    /// `http://127.0.0.1:<port>/`.
    public let baseURL: URL
    public let port: Int
    private let serverChannel: NIOAsyncChannel<NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>, Never>
    private let recorded = NIOLockedValueBox<[RecordedRequest]>([])
    private let connections = NIOLockedValueBox<[any Channel]>([])
    private let task = NIOLockedValueBox<Task<Void, Never>?>(nil)

    private init(channel: NIOAsyncChannel<NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>, Never>, port: Int) {
        self.serverChannel = channel
        self.port = port
        self.baseURL = URL(string: "http://127.0.0.1:\(port)/")!
    }

    /// Every request received so far, in order.
    public var requests: [RecordedRequest] { recorded.withLockedValue { $0 } }

    /// Starts a server on a free port of 127.0.0.1.
    public static func start(_ handler: @escaping Handler) async throws -> TestHTTPServer {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: "127.0.0.1", port: 0) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    return try NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>(wrappingChannelSynchronously: channel)
                }
            }
        let server = TestHTTPServer(channel: channel, port: channel.channel.localAddress?.port ?? 0)
        server.task.withLockedValue { $0 = Task { await server.serve(handler) } }
        return server
    }

    /// Stops accepting, closes every connection, and waits for the server to end.
    public func shutdown() async {
        try? await serverChannel.channel.close()
        for connection in connections.withLockedValue({ $0 }) { try? await connection.close() }
        let running = task.withLockedValue { $0 }
        running?.cancel()
        await running?.value
    }

    private func serve(_ handler: @escaping Handler) async {
        await withDiscardingTaskGroup { group in
            try? await serverChannel.executeThenClose { inbound in
                for try await connection in inbound {
                    connections.withLockedValue { $0.append(connection.channel) }
                    group.addTask { await self.handle(connection, handler) }
                }
            }
            group.cancelAll()
        }
    }

    private func handle(_ connection: NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>, _ handler: Handler) async {
        try? await connection.executeThenClose { inbound, outbound in
            var head: HTTPRequestHead?
            var body: [UInt8] = []
            for try await part in inbound {
                switch part {
                case .head(let requestHead):
                    head = requestHead
                    body = []
                case .body(let buffer):
                    body += buffer.readableBytesView
                case .end:
                    guard let requestHead = head else { return }
                    let request = RecordedRequest(
                        method: requestHead.method.rawValue, uri: requestHead.uri,
                        headers: requestHead.headers.map { ($0.name, $0.value) }, body: body
                    )
                    recorded.withLockedValue { $0.append(request) }
                    let response = await handler(request)
                    if let delay = response.delay { try await Task.sleep(for: delay) }
                    var headers = HTTPHeaders(response.headers)
                    if !headers.contains(name: "Content-Length") { headers.add(name: "Content-Length", value: "\(response.body.count)") }
                    let responseHead = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: response.status), headers: headers)
                    switch response.action {
                    case .drop:
                        return
                    case .stall:
                        try await Task.sleep(for: .seconds(3600))
                        return
                    case .truncate(let count):
                        try await outbound.write(.head(responseHead))
                        try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: response.body.prefix(count)))))
                        return
                    case .partialThenStall(let count):
                        try await outbound.write(.head(responseHead))
                        try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: response.body.prefix(count)))))
                        try await Task.sleep(for: .seconds(3600))
                        return
                    case .respond:
                        try await outbound.write(.head(responseHead))
                        if !response.body.isEmpty, requestHead.method != .HEAD {
                            try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: response.body))))
                        }
                        try await outbound.write(.end(nil))
                        if !requestHead.isKeepAlive { return }
                    }
                }
            }
        }
    }
}

/// Runs `body` with a started server and shuts the server down afterwards, even when `body` throws.
public func withTestServer<Result>(_ handler: @escaping TestHTTPServer.Handler, _ body: (TestHTTPServer) async throws -> Result) async throws -> Result {
    let server = try await TestHTTPServer.start(handler)
    do {
        let result = try await body(server)
        await server.shutdown()
        return result
    } catch {
        await server.shutdown()
        throw error
    }
}
