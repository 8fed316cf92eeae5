import Logging
import MiniAppBridge
import MiniAppCore
import MiniAppPermissions
import MiniAppWebHost

extension HostService {
    /// Logs every callback of the browser host, as NextAuth's applications log their SDK's, and answers
    /// a closed launch gate from code when `allowingLaunches`: the host service decides for its user.
    /// Runs until its task is cancelled.
    func observe(allowingLaunches: Bool, logger: Logger) async {
        for await callback in await browser.callbacks() {
            switch callback.kind {
            case .prompt(let prompt):
                logger.notice("prompt", metadata: ["app-id": "\(prompt.appId)", "prompt": "\(prompt.id)", "asks": "\(Self.asks(prompt.kind))"])
                if allowingLaunches, case .launchGate = prompt.kind {
                    await prompt.answer(.launch(allowed: true))
                }
            case .promptUpdated(let prompt, let update):
                logger.notice("prompt updated", metadata: ["prompt": "\(prompt.id)", "message": "\(update.message ?? "")"])
            case .promptSettled(let prompt, let settlement):
                logger.notice("prompt settled", metadata: ["prompt": "\(prompt.id)", "by": "\(settlement.by)", "answered": "\(settlement.answered)"])
            case .call(let appId, let call):
                logger.notice("call", metadata: ["app-id": "\(appId)", "action": "\(call.action)"])
            case .signal(let appId, let signal):
                logger.notice("signal", metadata: ["app-id": "\(appId)", "signal": "\(signal.action)"])
            case .appOpened(let appId, let versionId):
                logger.notice("app opened", metadata: ["app-id": "\(appId)", "version-id": "\(versionId)"])
            case .appClosed(let appId, let reason):
                logger.notice("app closed", metadata: ["app-id": "\(appId)", "reason": "\(reason)"])
            case .capability(let appId, let event):
                logger.notice("capability", metadata: ["app-id": "\(appId)", "event": "\(event)"])
            case .launchGate(let appId, let decision):
                logger.notice("launch gate", metadata: ["app-id": "\(appId)", "open": "\(decision.allowed)", "missing": "\(decision.missing)"])
            case .permissionChanged(let change):
                logger.notice("permission changed", metadata: [
                    "app-id": "\(change.appId)", "permission": "\(change.change.name)", "status": "\(change.change.to?.rawValue ?? "undecided")",
                    "source": "\(change.source)", "here": "\(change.writtenHere)",
                ])
            case .profileChanged:
                logger.notice("host profile changed")
            case .install(let event):
                logger.notice("install", metadata: ["event": "\(event)"])
            }
        }
    }

    /// What a prompt asks, for the log: names only, never what the app sent (a message, a share).
    static func asks(_ kind: HostPrompt.Kind) -> String {
        switch kind {
        case .permissions(let items): "permissions " + items.map(\.name).joined(separator: ",")
        case .sheet(let name, _): "sheet " + name
        case .launchGate(let missing): "launch gate " + missing.joined(separator: ",")
        }
    }
}
