@testable import MiniAppBridge
import MiniAppCore

/// The answer to one call, made under a capability granted for it.
func call(_ dispatcher: BridgeDispatcher, _ action: String, _ param: JSONValue = .null) async -> BridgeOutcome {
    do {
        let capability = try await dispatcher.grant()
        return await dispatcher.reply(to: BridgeMessage(id: "1", action: action, param: param), capability: capability).outcome
    } catch {
        return .failure(error)
    }
}

/// The type of a failure's answer; `nil` for a success.
func failureType(_ outcome: BridgeOutcome) -> String? {
    if case .failure(let failure) = outcome { return failure.type }
    return nil
}
