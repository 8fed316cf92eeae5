import Foundation
import Hummingbird
import Logging
import MiniAppBridge
import MiniAppCore
import MiniAppKit
import MiniAppPermissions
import MiniAppWebHost
import NIOCore
import NIOPosix

/// A small host service that embeds MiniAppKit: it lists the platform's mini-apps, installs and loads
/// one, serves the loaded bundle's files to a browser behind the launch gate, lets the user grant or
/// deny a permission, and answers a mini-app bridge's question "may app X use permission P". A loaded
/// app also runs in the browser host (MiniAppWebHost, on a port of its own): its page shows the app on its
/// own origin with the bridge, and asks the user for permissions.
///
/// One runtime for the whole service (its installer, platform and permission store), made at start and
/// shared by every request; the library's blocking work runs on the runtime's executor, so the
/// service's own handlers (such as `/health`) keep answering while installs run.
struct HostService: Sendable {
    let runtime: MiniAppRuntime
    let platform: any PlatformAPI
    let installer: BundleInstaller
    let store: PermissionStore
    /// Where loaded apps run in a browser, with their bridge.
    let browser: BrowserHost
    let files: FileIO

    /// The service for `configuration`, its apps speaking `dialect`, with the library logging through `logger`.
    static func make(
        configuration: MiniAppConfiguration, dialect: BridgeDialect = .rakuten, profile: HostProfile = HostProfile(), browserPort: Int, logger: Logger
    ) async throws -> HostService {
        let runtime = MiniAppRuntime(configuration: configuration, logger: logger)
        do {
            let platform = try runtime.platform()
            let store = try await runtime.permissionStore()
            let installer = try runtime.installer()
            let identity = try await BrowserHost.identity(keptIn: configuration.cacheDirectory, executor: runtime.executor)
            let browser = try await BrowserHost(
                runtime: runtime, profile: profile, identity: identity, port: browserPort, dialect: dialect, logger: logger
            )
            return HostService(
                runtime: runtime, platform: platform, installer: installer, store: store, browser: browser,
                files: FileIO(threadPool: runtime.executor.threadPool)
            )
        } catch {
            await runtime.shutdown()
            throw error
        }
    }

    /// Closes what the library opened.
    func shutdown() async {
        await runtime.shutdown()
    }

    /// The service's routes.
    func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.get("health") { _, _ in "ok" }
        router.get("apps") { _, _ in try await listApps() }
        router.post("apps/:id/load") { _, context in try await load(try context.parameters.require("id")) }
        router.post("apps/:id/download") { request, context in
            try await download(try context.parameters.require("id"), force: request.uri.queryParameters["force"] == "1")
        }
        router.get("apps/:id/files/**") { request, context in
            try await serveFile(appId: try context.parameters.require("id"), path: context.parameters.getCatchAll().joined(separator: "/"), request: request, context: context)
        }
        router.post("apps/:id/events/:name") { request, context in
            try await sendEvent(appId: try context.parameters.require("id"), name: try context.parameters.require("name"), request: request)
        }
        router.get("apps/:id/permissions/:name") { _, context in
            try await bridgeAnswer(appId: try context.parameters.require("id"), permission: try context.parameters.require("name"))
        }
        router.post("apps/:id/permissions/:name/:decision") { _, context in
            try await decide(appId: try context.parameters.require("id"), permission: try context.parameters.require("name"), decision: try context.parameters.require("decision"))
        }
        return router
    }

    // MARK: Handlers

    func listApps() async throws -> Response {
        let apps = try await platform.listApps().map { app in
            ["id": app.id, "displayName": app.displayName ?? app.id, "versionId": app.version.versionId]
        }
        return try Self.json(apps)
    }

    /// Installs (or reuses) the latest version and opens the launch gate, or answers 403 naming the
    /// permissions the user has not granted; either way the app is opened in the browser host, whose
    /// page (`page`) asks for what the gate needs.
    func load(_ appId: String) async throws -> Response {
        do {
            let outcome = try await installer.load(appId: appId)
            try await browser.open(outcome.record)
            return try Self.json([
                "id": outcome.record.id, "versionId": outcome.record.versionId, "source": outcome.record.source.rawValue,
                "page": browser.pageURL(appId: appId).absoluteString,
            ])
        } catch let error as PermissionStoreError {
            guard case .launchRefused(_, let missing) = error else { throw error }
            if let record = try await installer.cachedVersions(appId: appId).first { try await browser.open(record) }
            return try Self.json(["error": "launch refused", "missing": missing, "page": browser.pageURL(appId: appId).absoluteString], status: .forbidden)
        } catch let error as any CategorizedError {
            return try Self.json(["error": error.description], status: error.category == .notFound ? .notFound : .badGateway)
        }
    }

    /// Installs the latest version, again when `force`: what an operator's "update now" does.
    func download(_ appId: String, force: Bool) async throws -> Response {
        do {
            let outcome = try await installer.download(appId: appId, force: force)
            return try Self.json(["id": outcome.record.id, "versionId": outcome.record.versionId, "source": outcome.record.source.rawValue])
        } catch let error as any CategorizedError {
            return try Self.json(["error": error.description], status: error.category == .notFound ? .notFound : .badGateway)
        }
    }

    /// A file of the app's newest cached version, only while its launch gate is open.
    func serveFile(appId: String, path: String, request: Request, context: BasicRequestContext) async throws -> Response {
        guard Identifier.isValid(appId), let record = try await installer.cachedVersions(appId: appId).first else {
            return try Self.json(["error": "app \(appId) is not loaded"], status: .notFound)
        }
        let decision = try await installer.launchDecision(for: record)
        guard decision.allowed else {
            return try Self.json(["error": "launch refused", "missing": decision.missing], status: .forbidden)
        }
        let components = path.split(separator: "/", omittingEmptySubsequences: false)
        guard !components.isEmpty, components.allSatisfy({ !$0.isEmpty && $0 != "." && $0 != ".." }) else {
            return try Self.json(["error": "no such file"], status: .notFound)
        }
        let file = record.path + "/" + path
        var info = stat()
        guard lstat(file, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            return try Self.json(["error": "no such file"], status: .notFound)
        }
        let body = try await files.loadFile(path: file, context: context)
        var headers = HTTPFields()
        headers[.contentType] = Self.contentType(of: path)
        return Response(status: .ok, headers: headers, body: body)
    }

    /// Sends the running app an event (an app-domain one such as `online_status`), the body as its message.
    func sendEvent(appId: String, name: String, request: Request) async throws -> Response {
        var request = request
        let body = try await request.collectBody(upTo: 64 * 1024)
        guard browser.send(BridgeEvent(name: name, message: String(buffer: body)), to: appId) else {
            return try Self.json(["error": "app \(appId) is not running"], status: .notFound)
        }
        return try Self.json(["sent": name])
    }

    /// What a mini-app's bridge asks before it hands out user data.
    func bridgeAnswer(appId: String, permission: String) async throws -> Response {
        guard Identifier.isValid(appId), PermissionName.isValid(permission) else {
            return try Self.json(["error": "invalid app id or permission name"], status: .badRequest)
        }
        let allowed = try await store.isAllowed(appId: appId, permission: permission)
        return try Self.json(["appId": appId, "permission": PermissionName.full(permission), "allowed": allowed] as [String: any Sendable])
    }

    /// The user's decision on one permission.
    func decide(appId: String, permission: String, decision: String) async throws -> Response {
        let status: PermissionStatus
        switch decision {
        case "grant": status = .allowed
        case "deny": status = .denied
        default: return try Self.json(["error": "decide with grant or deny"], status: .notFound)
        }
        guard Identifier.isValid(appId), PermissionName.isValid(permission) else {
            return try Self.json(["error": "invalid app id or permission name"], status: .badRequest)
        }
        try await store.set(appId: appId, [permission: status])
        return try Self.json(["appId": appId, "permission": PermissionName.full(permission), "status": status.rawValue])
    }

    // MARK: Helpers

    static func json(_ value: Any, status: HTTPResponse.Status = .ok) throws -> Response {
        let data = try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys])
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func contentType(of path: String) -> String {
        switch (path as NSString).pathExtension.lowercased() {
        case "html", "htm": "text/html; charset=utf-8"
        case "js", "mjs": "text/javascript"
        case "css": "text/css"
        case "json": "application/json"
        case "png": "image/png"
        case "jpg", "jpeg": "image/jpeg"
        case "svg": "image/svg+xml"
        default: "application/octet-stream"
        }
    }
}
