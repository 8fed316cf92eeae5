import Foundation
import Testing

@testable import MiniAppBridge
@testable import MiniAppWebHost

/// The browser host's injected script is made from the bridge's table: every declared action has its
/// methods, under every path the SDK looks for, sending the SDK's parameter shape.
@Suite struct BridgeScriptTests {
    let script = BridgeScript.source(platform: "Web", port: 4321)

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
        #expect(script.contains(#"HOSTS=["http://localhost:4321","http://127.0.0.1:4321"]"#))
        #expect(script.contains(#"var PLATFORM="Web""#))
    }
}
