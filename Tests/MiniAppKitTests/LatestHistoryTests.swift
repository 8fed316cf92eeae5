import Foundation
import MiniAppCore
import Testing

@testable import MiniAppKit

/// The memory of an app's latest versions: what is a rollback, what the memory keeps, and its document.
@Suite struct LatestHistoryTests {
    static func version(_ id: String, _ tag: String? = nil) -> AppVersion { AppVersion(versionId: id, versionTag: tag) }

    @Test func aVersionSeenReplacedIsARollbackWhateverItsTag() {
        var history = LatestHistory()
        let first = history.accept(Self.version("a", "spring"), at: Date())
        let second = history.accept(Self.version("b", "summer"), at: Date())
        let again = history.accept(Self.version("b", "summer"), at: Date())
        #expect(first && second)
        #expect(!again, "the same latest changes nothing")
        #expect(history.rollback(appId: "x", offered: Self.version("a", "spring"), installed: []) == Rollback(
            appId: "x", offered: Self.version("a", "spring"), newer: Self.version("b", "summer")
        ))
        #expect(history.rollback(appId: "x", offered: Self.version("b", "summer"), installed: []) == nil)
        #expect(history.rollback(appId: "x", offered: Self.version("c", "autumn"), installed: []) == nil, "a version never seen, untagged by semver, is new")
    }

    @Test func aLowerSemanticVersionThanOneInstalledOrAcceptedIsARollback() {
        var history = LatestHistory()
        history.accept(Self.version("v2", "2.0.0"), at: Date())
        #expect(history.rollback(appId: "x", offered: Self.version("v1", "1.9.9"), installed: [])?.newer == Self.version("v2", "2.0.0"))
        #expect(history.rollback(appId: "x", offered: Self.version("v3", "2.0.1"), installed: []) == nil)
        let installed = [Self.version("v4", "v3.0.0"), Self.version("v5", "not-semver")]
        #expect(history.rollback(appId: "x", offered: Self.version("v3", "2.0.1"), installed: installed)?.newer == Self.version("v4", "v3.0.0"))
        #expect(history.rollback(appId: "x", offered: Self.version("v6", "3.0.0-rc.1"), installed: installed) != nil, "a pre-release comes before its release")
        #expect(history.rollback(appId: "x", offered: Self.version("v7", "someday"), installed: installed) == nil, "tags that are not semantic versions are not compared")
    }

    @Test func aHigherVersionInstalledSinceMakesTheSameLatestARollback() {
        var history = LatestHistory()
        history.accept(Self.version("a", "1.0.0"), at: Date())
        #expect(history.rollback(appId: "x", offered: Self.version("a", "1.0.0"), installed: []) == nil)
        let noted = history.noteInstalled(Self.version("c", "1.2.0"), at: Date())
        let lower = history.noteInstalled(Self.version("b", "1.1.0"), at: Date())
        #expect(noted && !lower, "only a higher version is noted")
        #expect(history.rollback(appId: "x", offered: Self.version("a", "1.0.0"), installed: [])?.newer == Self.version("c", "1.2.0"))
        history.allow(Self.version("a", "1.0.0"), at: Date())
        #expect(history.rollback(appId: "x", offered: Self.version("a", "1.0.0"), installed: []) == nil, "allowed, it is the latest")
    }

    @Test func anAllowedDowngradeIsTheLatestFromThenOn() {
        var history = LatestHistory()
        history.accept(Self.version("a", "1.0.0"), at: Date())
        history.accept(Self.version("b", "1.0.1"), at: Date())
        #expect(history.rollback(appId: "x", offered: Self.version("a", "1.0.0"), installed: [Self.version("b", "1.0.1")]) != nil)
        history.allow(Self.version("a", "1.0.0"), at: Date())
        #expect(history.rollback(appId: "x", offered: Self.version("a", "1.0.0"), installed: [Self.version("b", "1.0.1")]) == nil)
        #expect(history.rollback(appId: "x", offered: Self.version("b", "1.0.1"), installed: []) == nil, "the newer version answered again is an update")
    }

    @Test func theDocumentReadsBackAndABrokenOneIsRefused() throws {
        var history = LatestHistory()
        history.accept(Self.version("a", nil), at: Date(timeIntervalSince1970: 1_795_910_400))
        history.accept(Self.version("b", "1.0.0"), at: Date(timeIntervalSince1970: 1_795_910_401.5))
        history.allow(Self.version("a", nil), at: Date(timeIntervalSince1970: 1_795_910_402))
        history.noteInstalled(Self.version("b", "1.0.0"), at: Date(timeIntervalSince1970: 1_795_910_403))
        #expect(LatestHistory(json: Array(history.json)) == history)
        for broken in ["", "[]", #"{"format": "other", "version": 1}"#, #"{"format": "miniapp.latest-history", "version": 2}"#,
                       #"{"format": "miniapp.latest-history", "version": 1, "replaced": [{"versionId": "../x", "seenAt": "2026-11-29T00:00:00.000Z"}]}"#,
                       #"{"format": "miniapp.latest-history", "version": 1, "latest": 3}"#] {
            #expect(LatestHistory(json: Array(broken.utf8)) == nil, "\(broken)")
        }
    }

    @Test func semanticVersionsOrderAsSemverSays() throws {
        let ordered = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.10.0", "2.0.0"]
        let parsed = try ordered.map { try #require(SemanticVersion($0)) }
        for (earlier, later) in zip(parsed, parsed.dropFirst()) { #expect(earlier < later) }
        #expect(SemanticVersion("1.0.0+build.5") == SemanticVersion("1.0.0"))
        for bad in ["1.0", "1.0.0.0", "01.0.0", "1.0.0-", "1..0", "x.y.z", ""] { #expect(SemanticVersion(bad) == nil, "\(bad)") }
    }
}
