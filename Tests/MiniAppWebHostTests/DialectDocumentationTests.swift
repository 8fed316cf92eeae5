import Foundation
import MiniAppBridge
import MiniAppTestSupport
import Testing

/// The article on hosting other hosts' bridges is made from the dialects' declarations: each dialect's
/// section lists every action and event it declares, as a row of its tables.
@Suite struct DialectDocumentationTests {
    static let article = repositoryRoot.appendingPathComponent("Sources/MiniAppWebHost/MiniAppWebHost.docc/HostingAnyBridge.md")

    @Test(arguments: [BridgeDialect.liquidState, .forem, .corva].map(\.name))
    func theArticleListsEveryActionAndEventOfEachDialect(name: String) throws {
        let dialect = try BridgeDialect.named(name)
        let text = try String(contentsOf: Self.article, encoding: .utf8)
        let sections = text.components(separatedBy: "\n## ")
        let section = try #require(sections.first { $0.hasPrefix(dialect.title + "\n") }, "no section titled \(dialect.title)")
        for action in dialect.actions {
            #expect(section.contains("| `\(action.name)` |"), "\(dialect.title): the action \(action.name) has no row")
        }
        for event in dialect.events {
            #expect(section.contains("| `\(event.name)` |"), "\(dialect.title): the event \(event.name) has no row")
        }
        // And nothing the dialect does not declare.
        let rows = section.split(separator: "\n").filter { $0.hasPrefix("| `") }.compactMap { $0.dropFirst(3).split(separator: "`").first.map(String.init) }
        let declared = Set(dialect.actions.map(\.name) + dialect.events.map(\.name))
        #expect(Set(rows).subtracting(declared).isEmpty, "\(dialect.title): rows of undeclared names \(Set(rows).subtracting(declared))")
    }
}
