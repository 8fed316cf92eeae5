import Foundation
import MiniAppBridge
import MiniAppCore

/// The dialect the reference host speaks: a built-in one by name (`rakuten`, `liquidstate`, `forem`,
/// `corva`), or `acme`, the dialect this example declares for its own apps.
func hostDialect(named name: String?) throws -> BridgeDialect {
    guard let name, name != "rakuten" else { return .rakuten }
    if name == acme.name { return acme }
    return try BridgeDialect.named(name)
}

/// An in-house host's bridge, declared from the same parts as the built-in ones: the app posts to
/// `window.webkit.messageHandlers.acme`, and the host answers through the app's own `acmeReceive`.
let acme = BridgeDialect(
    name: "acme", title: "Acme",
    transports: [.messageHandlers(["acme"])],
    launch: BridgeDialect.Launch(query: [BridgeDialect.QueryItem("embedded", .text("1"))], userAgentToken: "AcmeHost/2.0"),
    actions: [
        BridgeDialect.Action(
            "acme", gate: .permission(.userName), reply: .delivery(.function("acmeReceive", argument: .json)),
            summary: "{\"ask\": \"name\"}: the user's name, behind USER_NAME"
        ) { context throws(BridgeFailure) in
            guard case .object(let fields) = context.param, fields["ask"] == .string("name") else {
                throw .invalidParameters("acme", "{\"ask\": \"name\"}")
            }
            let name = try await context.services.userName(appId: context.appId)
            guard let answer = try? JSONEncoder().encode(["name": name]) else { throw BridgeFailure(type: "MiniAppError", message: "the name cannot be sent") }
            return String(decoding: answer, as: UTF8.self)
        },
    ],
    events: [
        BridgeDialect.Event("acmeNews", delivery: .function("acmeReceive", argument: .json), example: #"{"news":"hello"}"#, summary: "news from the host"),
    ]
)
