import MiniAppBridge
import MiniAppCore

/// The script a browser host puts first in every HTML page of a mini-app, made from the host's dialect
/// (``BridgeDialect``): the shared plumbing (`bridge-core.js`), then each of the dialect's transports
/// (`bridge-rakuten.js` with the methods of Rakuten's action table, `bridge-webkit.js`,
/// `bridge-url-scheme.js`), under a configuration made from the declaration, in one function that
/// leaves no global but those the dialect's host defines.
///
/// Calls go out only with the capability the host page hands the document in the app's frame: the
/// script greets the host page (`{miniappBridge: "hello", nonce}`, posted to the frame's parent, which
/// must be the top-level host page) and waits for `{miniappBridge: "grant", nonce, capability}` from
/// it; calls made meanwhile wait. A page that is not that frame's document (a popup, a new tab, a page
/// nested in the app) gets no capability, and its calls fail with `AuthorizationFailureError`.
enum BridgeScript {
    /// The script of `dialect`, reporting `platform`, for a host page on `port`.
    static func source(dialect: BridgeDialect, platform: String, port: Int) -> String {
        var text = "(function () {\n'use strict';\n"
        text += "var CONFIG = " + JSONWriter.text(configuration(dialect: dialect, platform: platform, port: port)) + ";\n"
        // Once per page, however many times it is included.
        text += "var SEEN = typeof Symbol === 'function' ? Symbol.for('miniapp.bridge') : '__miniappBridge';\n"
        text += "if (window[SEEN]) { return; }\nObject.defineProperty(window, SEEN, { value: true });\n"
        text += PageResources.text(.bridgeCore)
        for transport in dialect.transports {
            switch transport {
            case .miniAppBridge: text += PageResources.text(.bridgeRakuten) + methods + PageResources.text(.bridgeRakutenGlobal)
            case .messageHandlers: text += PageResources.text(.bridgeWebKit)
            case .urlScheme: text += PageResources.text(.bridgeURLScheme)
            }
        }
        return text + "start();\n})();\n"
    }

    /// What the scripts read of the dialect.
    static func configuration(dialect: BridgeDialect, platform: String, port: Int) -> JSONValue {
        var fields: [String: JSONValue] = [
            "platform": .string(platform),
            "hosts": .array(["http://localhost:\(port)", "http://127.0.0.1:\(port)"].map { .string($0) }),
            "dialect": .string(dialect.name),
            "events": .object(Dictionary(dialect.events.map { ($0.name, json($0.delivery)) }, uniquingKeysWith: { first, _ in first })),
            "replies": .object(Dictionary(dialect.actions.map { ($0.name, json($0.reply)) }, uniquingKeysWith: { first, _ in first })),
            "reads": .object(Dictionary(dialect.actions.compactMap { action in action.reads.map { (action.name, .string($0.rawValue)) } }, uniquingKeysWith: { first, _ in first })),
            // Rakuten's hosts send events of any name; the SDK listens on `window`.
            "anyEvent": .bool(dialect.transports.contains(.miniAppBridge)),
            "userAgent": dialect.launch.userAgentToken.map { .string($0) } ?? .null,
            "messageHandlers": .array([]),
        ]
        for transport in dialect.transports {
            switch transport {
            case .miniAppBridge: break
            case .messageHandlers(let names): fields["messageHandlers"] = .array(names.map { .string($0) })
            case .urlScheme(let scheme, let domain, let query, let function):
                fields["urlScheme"] = .object(["scheme": .string(scheme), "domain": .string(domain.lowercased()), "query": .string(query), "function": .string(function)])
            }
        }
        return .object(fields)
    }

    static func json(_ delivery: BridgeDialect.Delivery) -> JSONValue {
        switch delivery {
        case .windowEvent: .object(["kind": .string("windowEvent")])
        case .function(let path, let argument, let otherwise):
            .object([
                "kind": .string("function"), "path": .string(path), "argument": .string(argument == .json ? "json" : "text"),
                "otherwise": otherwise.map { .string($0) } ?? .null,
            ])
        case .inputValue: .object(["kind": .string("inputValue")])
        }
    }

    static func json(_ reply: BridgeDialect.Reply) -> JSONValue {
        switch reply {
        case .none: .object(["kind": .string("none")])
        case .transport: .object(["kind": .string("transport")])
        case .delivery(let delivery): .object(["kind": .string("delivery"), "delivery": json(delivery)])
        }
    }

    /// The methods of Rakuten's bridge, one per script method of every declared action (``BridgeDispatcher``'s
    /// table), each a function sending its action with the SDK's parameter shape; a method with several
    /// paths is one function under each.
    static let methods: String = {
        var text = ""
        for declaration in BridgeDispatcher.declarationList {
            for method in declaration.methods {
                let name = JSONWriter.text(.string(declaration.name))
                text += "(function (method) { " + method.paths.map { "define(" + JSONWriter.text(.string($0)) + ", method);" }.joined(separator: " ") + " })("
                    + "function (\(method.arguments)) { return call(\(name), \(method.param), '\(method.form.rawValue)', \(method.parsesErrors)); });\n"
            }
        }
        return text
    }()
}
