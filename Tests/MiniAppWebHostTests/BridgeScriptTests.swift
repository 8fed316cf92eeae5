import Foundation
import MiniAppCore
import Testing

@testable import MiniAppBridge
@testable import MiniAppWebHost

/// The browser host's injected script is made from the dialect's declaration: Rakuten's methods from the
/// bridge's table (every declared action under every path the SDK looks for, sending the SDK's parameter
/// shape), and each other dialect's transports, events and replies from its own.
@Suite struct BridgeScriptTests {
    let script = BridgeScript.source(dialect: .rakuten, platform: "Web", port: 4321)

    @Test func everyDeclaredActionHasItsMethodsUnderEveryPath() {
        for declaration in BridgeDispatcher.declarationList {
            for method in declaration.methods {
                let sends = "function (\(method.arguments)) { return call(\"\(declaration.name)\", \(method.param), '\(method.form.rawValue)', \(method.parsesErrors)); }"
                #expect(script.contains(sends), "\(declaration.name) via \(method.paths)")
                for path in method.paths { #expect(script.contains("define(\"\(path)\", method);"), "\(path)") }
            }
        }
        // The generated methods name their action in double quotes; the script's own wrappers (the
        // position, the camera) call declared actions too, in single quotes.
        let calls = script.components(separatedBy: "return call(\"").count - 1
        #expect(calls == BridgeDispatcher.declarationList.reduce(0) { $0 + $1.methods.count })
    }

    @Test func theScriptKnowsItsHostPageAndPlatform() {
        #expect(script.contains(#""hosts":["http://localhost:4321","http://127.0.0.1:4321"]"#))
        #expect(script.contains(#""platform":"Web""#))
    }

    /// Each dialect's script carries its own transports only: what a host of that kind defines.
    @Test(arguments: Array(BridgeDialect.builtIn.keys.sorted()))
    func eachDialectsScriptCarriesItsTransportsOnly(name: String) throws {
        let dialect = try BridgeDialect.named(name)
        let source = BridgeScript.source(dialect: dialect, platform: "Web", port: 4321)
        let rakuten = dialect.transports.contains(.miniAppBridge)
        #expect(source.contains("Object.defineProperty(window, 'MiniAppBridge'") == rakuten)
        #expect(source.contains("CONFIG.messageHandlers.forEach") == dialect.transports.contains { if case .messageHandlers = $0 { true } else { false } })
        #expect(source.contains("HTMLIFrameElement.prototype") == dialect.transports.contains { if case .urlScheme = $0 { true } else { false } })
        #expect(source.hasPrefix("(function () {") && source.hasSuffix("start();\n})();\n"))
        // Every event and reply of the declaration is in the script's configuration.
        let configuration = BridgeScript.configuration(dialect: dialect, platform: "Web", port: 4321)
        guard case .object(let events)? = configuration["events"], case .object(let replies)? = configuration["replies"] else {
            Issue.record("no events or replies in \(name)'s configuration")
            return
        }
        #expect(Set(events.keys) == Set(dialect.events.map(\.name)))
        #expect(Set(replies.keys) == Set(dialect.actions.map(\.name)))
    }

    @Test func anUnknownDialectIsRefusedByName() {
        #expect(throws: BridgeDialectError.unknown(name: "acme")) { try BridgeDialect.named("acme") }
        #expect(BridgeDialectError.unknown(name: "acme").description.contains("corva, forem, liquidstate, rakuten"))
    }
}
