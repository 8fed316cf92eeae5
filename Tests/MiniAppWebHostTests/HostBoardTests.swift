@testable import MiniAppBridge
import MiniAppCore
import Testing

@testable import MiniAppWebHost

struct HostBoardTests {
    /// Another app's notices, more than the board keeps, must not hide a prompt or a sheet that still
    /// waits: neither from a page that opens later nor from one that polls after them.
    @Test func aWaitingPromptOrSheetOutlivesTheNoticesPostedAfterIt() async throws {
        let board = HostBoard()
        let (start, _) = await board.notices(after: 0, wait: .seconds(1))
        let prompt = PermissionPrompt(appId: "shop", items: [PermissionPrompt.Item(name: "rakuten.miniapp.user.USER_NAME", reason: nil, required: false)])
        let asked = Task { try await board.ask(prompt) }
        let shown = Task { try await board.show(HostSheet(appId: "shop", kind: "share", payload: .string("hi"))) }
        var waiting: [Int] = []
        while waiting.count < 2 {
            waiting = await board.notices(after: 0, wait: .seconds(1)).notices.compactMap(Self.waitingId)
            await Task.yield()
        }
        for index in 0..<300 { board.inform(appId: "other", kind: "notification", payload: .number(Double(index))) }

        let opened = await board.notices(after: 0, wait: .seconds(1))
        #expect(opened.notices.compactMap(Self.waitingId) == waiting.sorted())
        let behind = await board.notices(after: start, wait: .seconds(1))
        #expect(behind.notices.prefix(2).compactMap(Self.waitingId) == waiting.sorted())
        #expect(behind.notices.count == 2 + 256 && behind.next == opened.next)
        let current = await board.notices(after: opened.next - 1, wait: .seconds(1))
        #expect(current.notices.count == 1 && current.notices.allSatisfy { Self.waitingId($0) == nil }, "a page that keeps up gets no replay")

        #expect(board.settle(waiting.sorted()[0], with: [:]) || board.answer(waiting.sorted()[0], with: nil))
        #expect(board.settle(waiting.sorted()[1], with: [:]) || board.answer(waiting.sorted()[1], with: nil))
        _ = try await asked.value
        _ = try await shown.value
        #expect(await board.notices(after: 0, wait: .seconds(1)).notices.isEmpty, "nothing waits any more")
    }

    private static func waitingId(_ notice: HostNotice) -> Int? {
        switch notice.kind {
        case .prompt(let id, _), .sheet(let id, _): return id
        default: return nil
        }
    }
}
