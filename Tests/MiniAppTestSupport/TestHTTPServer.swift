public import Foundation
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
///
/// Connections are served by a plain channel handler rather than `NIOAsyncChannel`: a connection
/// accepted while the server shuts down (the client's connection probe makes such late ones) would
/// otherwise be dropped with an unfinished async writer, which traps.
public final class TestHTTPServer: Sendable {
    public typealias Handler = @Sendable (RecordedRequest) async -> StubResponse

    /// `http://127.0.0.1:<port>/`.
    public let baseURL: URL
    public let port: Int
    private let serverChannel: any Channel
    private let recorded: NIOLockedValueBox<[RecordedRequest]>
    private let connections: NIOLockedValueBox<[any Channel]>

    private init(channel: any Channel, recorded: NIOLockedValueBox<[RecordedRequest]>, connections: NIOLockedValueBox<[any Channel]>) {
        self.serverChannel = channel
        self.recorded = recorded
        self.connections = connections
        self.port = channel.localAddress?.port ?? 0
        self.baseURL = URL(string: "http://127.0.0.1:\(port)/")!
    }

    /// Every request received so far, in order.
    public var requests: [RecordedRequest] { recorded.withLockedValue { $0 } }

    /// Starts a server on a free port of 127.0.0.1.
    public static func start(_ handler: @escaping Handler) async throws -> TestHTTPServer {
        let recorded = NIOLockedValueBox<[RecordedRequest]>([])
        let connections = NIOLockedValueBox<[any Channel]>([])
        let channel = try await ServerBootstrap(group: serverLoops)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                connections.withLockedValue { $0.append(channel) }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(ScriptedConnection(handler: handler, recorded: recorded))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        return TestHTTPServer(channel: channel, recorded: recorded, connections: connections)
    }

    /// Stops accepting and closes every connection.
    public func shutdown() async {
        try? await serverChannel.close()
        for connection in connections.withLockedValue({ $0 }) { try? await connection.close() }
    }
}

/// The event loops of every test server: not NIO's shared ones, on which the clients under test run.
/// A debug build moves a big body through NIO slowly; a client's small request queued on the same
/// loop behind another test's zip would wait seconds and time out.
private let serverLoops = MultiThreadedEventLoopGroup(numberOfThreads: 4)

/// Runs the server's handlers on a queue of their own.
private final class ServerExecutor: TaskExecutor {
    static let shared = ServerExecutor()
    private let queue = DispatchQueue(label: "test-server", attributes: .concurrent)

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}

/// One connection's requests, each answered as the handler scripts it.
private final class ScriptedConnection: ChannelInboundHandler, Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let handler: TestHTTPServer.Handler
    private let recorded: NIOLockedValueBox<[RecordedRequest]>
    private let pending = NIOLockedValueBox<(head: HTTPRequestHead?, body: [UInt8])>((nil, []))

    init(handler: @escaping TestHTTPServer.Handler, recorded: NIOLockedValueBox<[RecordedRequest]>) {
        self.handler = handler
        self.recorded = recorded
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            pending.withLockedValue { $0 = (head, []) }
        case .body(let buffer):
            pending.withLockedValue { $0.body += buffer.readableBytesView }
        case .end:
            let (head, body) = pending.withLockedValue { $0 }
            guard let head else {
                context.close(promise: nil)
                return
            }
            let request = RecordedRequest(method: head.method.rawValue, uri: head.uri, headers: head.headers.map { ($0.name, $0.value) }, body: body)
            recorded.withLockedValue { $0.append(request) }
            let channel = context.channel
            let handler = handler
            // Not on Swift's cooperative pool: tests that block its two threads (waiting for a tool,
            // walking a cache) must not keep the server from answering the CLI they are waiting for.
            Task(executorPreference: ServerExecutor.shared) {
                let response = await handler(request)
                if let delay = response.delay { try? await Task.sleep(for: delay) }
                Self.answer(head, with: response, on: channel)
            }
        }
    }

    /// Writes `response` (channel writes are safe from any thread and go through the HTTP encoder).
    private static func answer(_ request: HTTPRequestHead, with response: StubResponse, on channel: any Channel) {
        var headers = HTTPHeaders(response.headers)
        if !headers.contains(name: "Content-Length") { headers.add(name: "Content-Length", value: "\(response.body.count)") }
        let head = HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: response.status), headers: headers))
        switch response.action {
        case .drop:
            channel.close(promise: nil)
        case .stall:
            break
        case .truncate(let count):
            channel.write(head, promise: nil)
            channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(bytes: response.body.prefix(count))))).whenComplete { _ in
                channel.close(promise: nil)
            }
        case .partialThenStall(let count):
            channel.write(head, promise: nil)
            channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(bytes: response.body.prefix(count)))), promise: nil)
        case .respond:
            channel.write(head, promise: nil)
            if !response.body.isEmpty, request.method != .HEAD {
                channel.write(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(bytes: response.body))), promise: nil)
            }
            let done = channel.writeAndFlush(HTTPServerResponsePart.end(nil))
            if !request.isKeepAlive { done.whenComplete { _ in channel.close(promise: nil) } }
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
