import Foundation
import Hummingbird
import HTTPTypes
import MiniAppBridge
import MiniAppCore
import MiniAppPermissions
import NIOCore

/// The host endpoints of the host page's panel (``HostPanel``): the app's bridge calls, the host's
/// profile, a permission reset, the app's secure storage and the faults forced on its actions. Like every host endpoint,
/// they answer the host page's session only.
extension BrowserHostResponder {
    /// The answer to a panel endpoint, or `nil` when `parts` names none.
    func panelAPI(_ request: Request, parts: [String]) async throws -> Response? {
        switch (request.method, parts.count) {
        case (.get, 1) where parts[0] == "profile":
            return Self.body(try Self.profileText(host.profile), type: "application/json", cache: false)
        case (.put, 1) where parts[0] == "profile":
            // The one definition of a profile: the document `--host-profile` reads, checked the same way.
            var request = request
            let body = try await request.collectBody(upTo: 1 << 20)
            let profile: HostProfile
            do {
                profile = try HostProfile(json: Data(body.readableBytesView))
            } catch {
                return Self.json(.badRequest, ["error": .string(error.description)])
            }
            if let dialect = profile.dialect, dialect != host.dialect.name {
                return Self.json(.badRequest, ["error": .string("this host speaks \(host.dialect.name): a host's dialect is chosen when it starts (--dialect)")])
            }
            host.setProfile(profile)
            return Self.body(try Self.profileText(profile), type: "application/json", cache: false)
        case (.delete, 4) where parts[0] == "apps" && parts[2] == "permissions":
            // One permission forgotten: undecided again, so that the app's next request asks the user.
            guard let app = host.openApps.first(where: { $0.appId == parts[1] }) else { return Self.json(.notFound, ["error": .string("no such app")]) }
            let name = parts[3].removingPercentEncoding ?? parts[3]
            guard PermissionName.isValid(name) else { return Self.json(.badRequest, ["error": .string("name a permission to reset")]) }
            try await host.store.reset(appId: app.appId, names: [name], source: .hostPage)
            // A required permission reset closes the gate: the app's pages lose the bridge.
            await app.dispatcher.gateMayHaveChanged()
            board.notifyStateChanged(appId: app.appId)
            return try await state(of: app)
        case (_, 3) where parts[0] == "apps" && ["calls", "storage", "faults"].contains(parts[2]),
             (.delete, 4) where parts[0] == "apps" && parts[2] == "faults":
            guard let app = host.openApps.first(where: { $0.appId == parts[1] }) else { return Self.json(.notFound, ["error": .string("no such app")]) }
            switch (request.method, parts[2]) {
            case (.get, "calls"):
                // A long poll, as `notices`: answered at the next call, or empty after 20 s. `limit`
                // keeps only the newest calls of the batch (the page draws no more), and `skipped` says
                // how many were left out: a busy app's hundreds of calls a second, encoded and parsed
                // in the process its frame shares, would otherwise slow its own calls.
                let after = Int(request.uri.queryParameters["after"].map(String.init) ?? "0") ?? 0
                let limit = Int(request.uri.queryParameters["limit"].map(String.init) ?? "").map { min(max($0, 1), CallLog.capacity) } ?? CallLog.capacity
                let (next, calls) = await app.panel.calls.calls(after: max(0, after), wait: .seconds(20))
                return Self.json(.ok, [
                    "next": .number(Double(next)), "skipped": .number(Double(max(0, calls.count - limit))),
                    "calls": .array(calls.suffix(limit).map { $0.call.panelJSON(sequence: $0.sequence) }),
                ])
            case (.get, "storage"):
                return try await storage(of: app)
            case (.post, "storage"):
                return try await changeStorage(request, app: app)
            case (.get, "faults"):
                return Self.faults(of: app)
            case (.post, "faults"):
                return try await addFault(request, app: app)
            case (.delete, "faults") where parts.count == 4:
                let action = parts[3].removingPercentEncoding ?? parts[3]
                guard BridgeMessage.isActionName(action) else { return Self.json(.badRequest, ["error": .string("an action is 1 to 64 letters, digits or _")]) }
                app.dispatcher.faults.set(nil, for: action)
                return Self.faults(of: app)
            default:
                return Self.json(.methodNotAllowed, ["error": .string("this method does not apply here")])
            }
        default:
            return nil
        }
    }

    /// The profile as a JSON document `HostProfile(json:)` reads back.
    static func profileText(_ profile: HostProfile) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(profile), as: UTF8.self)
    }

    // MARK: Secure storage

    /// The app's items, and the bytes they use of the host's limit.
    private func storage(of app: RunningApp) async throws -> Response {
        let limit = host.environment.secureStorageLimit
        do {
            let items = try await host.store.storageItems(appId: app.appId)
            let size = try await host.store.storageSize(appId: app.appId, limit: limit)
            return Self.json(.ok, [
                "items": .array(items.sorted { $0.key < $1.key }.map { .object(["key": .string($0.key), "value": .string($0.value)]) }),
                "used": .number(Double(size.used)), "max": .number(Double(size.max)),
            ])
        } catch {
            return Self.storageRefusal(error)
        }
    }

    /// `{"set": {key: value}}`, `{"remove": [key]}` or `{"clear": true}`: through the store's storage
    /// calls, so that the app's limit and rate hold for the page as for the app.
    private func changeStorage(_ request: Request, app: RunningApp) async throws -> Response {
        var request = request
        let body = try await request.collectBody(upTo: 1 << 20)
        let usage = "send {\"set\": {key: value}}, {\"remove\": [key]} or {\"clear\": true}"
        guard case .object(let fields)? = JSONReader.value(body.readableBytesView, maxDepth: 4), fields.count == 1 else {
            return Self.json(.badRequest, ["error": .string(usage)])
        }
        do {
            switch (fields["set"], fields["remove"], fields["clear"]) {
            case (.object(let items)?, nil, nil):
                var set: [String: String] = [:]
                for (key, value) in items {
                    guard case .string(let text) = value else { return Self.json(.badRequest, ["error": .string(usage)]) }
                    set[key] = text
                }
                try await host.store.setStorageItems(appId: app.appId, set, limit: host.environment.secureStorageLimit)
            case (nil, .array(let list)?, nil):
                var keys: [String] = []
                for case .string(let key) in list { keys.append(key) }
                guard keys.count == list.count else { return Self.json(.badRequest, ["error": .string(usage)]) }
                try await host.store.removeStorageItems(appId: app.appId, keys: keys)
            case (nil, nil, .bool(true)?):
                try await host.store.clearStorage(appId: app.appId)
            default:
                return Self.json(.badRequest, ["error": .string(usage)])
            }
        } catch {
            return Self.storageRefusal(error)
        }
        return try await storage(of: app)
    }

    private static func storageRefusal(_ error: any Error) -> Response {
        switch error {
        case let error as SecureStorageError:
            if case .busy = error { return json(.tooManyRequests, ["error": .string(error.description)]) }
            return json(.badRequest, ["error": .string(error.description)])
        case let error as PermissionStoreError:
            return json(.serviceUnavailable, ["error": .string(error.description)])
        default:
            return json(.badRequest, ["error": .string("\(error)")])
        }
    }

    // MARK: Faults

    private static func faults(of app: RunningApp) -> Response {
        let items: [JSONValue] = app.dispatcher.faults.all.sorted { $0.key < $1.key }.map { action, fault in
            switch fault {
            case .notSupported: return .object(["action": .string(action), "kind": .string("notSupported")])
            case .denied: return .object(["action": .string(action), "kind": .string("denied")])
            case .timeout(let seconds):
                return .object(["action": .string(action), "kind": .string("timeout"), "seconds": seconds.map { .number(Double($0)) } ?? .null])
            }
        }
        return json(.ok, ["faults": .array(items)])
    }

    /// `{"action": name, "kind": "notSupported" | "denied" | "timeout", "seconds": n}` (a timeout
    /// without seconds never answers until removed).
    private func addFault(_ request: Request, app: RunningApp) async throws -> Response {
        var request = request
        let body = try await request.collectBody(upTo: 4096)
        let usage = "send {\"action\": name, \"kind\": \"notSupported\" | \"denied\" | \"timeout\", \"seconds\": 1 to \(BridgeFault.maxTimeoutSeconds) (a timeout without it never answers)}"
        guard case .object(let fields)? = JSONReader.value(body.readableBytesView, maxDepth: 2), case .string(let action)? = fields["action"],
              BridgeMessage.isActionName(action), case .string(let kind)? = fields["kind"] else {
            return Self.json(.badRequest, ["error": .string(usage)])
        }
        let fault: BridgeFault
        switch (kind, fields["seconds"]) {
        case ("notSupported", nil), ("notSupported", .null?): fault = .notSupported
        case ("denied", nil), ("denied", .null?): fault = .denied
        case ("timeout", nil), ("timeout", .null?): fault = .timeout(seconds: nil)
        case ("timeout", .number(let seconds)?) where seconds >= 1 && seconds <= Double(BridgeFault.maxTimeoutSeconds) && seconds.rounded() == seconds:
            fault = .timeout(seconds: Int(seconds))
        default:
            return Self.json(.badRequest, ["error": .string(usage)])
        }
        app.dispatcher.faults.set(fault, for: action)
        return Self.faults(of: app)
    }
}
