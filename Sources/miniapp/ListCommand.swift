import ArgumentParser
import Foundation
import MiniAppCore
import MiniAppKit

struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the mini-apps of the project.",
        discussion: """
            Examples:
              miniapp list --platform https://platform.example/ --project-id my-project
              miniapp list --json
            """
    )

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        try await Self.list(options: options.settings)
    }

    /// The list, from plain values: what `run()` does, and what ``QuickCommandLine`` runs (with the
    /// executor `main` started early).
    static func list(options: CommandSettings, executor: BlockingExecutor? = nil) async throws {
        let configuration = try options.configuration(reading: .platformAccess)
        let (list, cached, rollbacks) = try await options.withRuntime(configuration, executor: executor) { runtime -> (AppListText, [Bool], [Int: Rollback]) in
            let cache = runtime.cache
            let list: AppListText
            let cached: [Bool]
            if configuration.offline {
                var newest: [String: InstallRecord] = [:]
                for record in cache.withOtherNamespaces().flatMap({ $0.records() }) where (newest[record.id]?.installedAt ?? .distantPast) < record.installedAt {
                    newest[record.id] = record
                }
                list = AppListText(records: newest.values.sorted { $0.id < $1.id }.map { record in
                    AppRecord(id: record.id, version: AppVersion(versionId: record.versionId, versionTag: record.versionTag))
                })
                cached = Array(repeating: true, count: list.entries.count)
            } else {
                list = try await runtime.appListText()
                let folders = cache.appFolderNames()
                cached = folders.isEmpty ? Array(repeating: false, count: list.entries.count) : list.withTexts { texts in
                    list.entries.map { entry in
                        guard let id = texts.string(entry[.id]), folders.contains(id), let versionId = texts.string(entry[.versionId]) else { return false }
                        return cache.record(appId: id, versionId: versionId) != nil
                    }
                }
            }
            return (list, cached, configuration.offline ? [:] : cache.rollbacks(in: list, preview: configuration.preview))
        }
        for rollback in rollbacks.sorted(by: { $0.key < $1.key }).map(\.value) where !options.quiet {
            Console.standardError("warning: \(rollback); download refuses it and load keeps the newer version")
        }
        if options.json {
            // An empty list is the empty array as `Console.json` prints it.
            if list.entries.isEmpty { try Console.json([String]()) } else { ListOutput.json(list, cached: cached, rollbacks: rollbacks) }
            return
        }
        guard !list.entries.isEmpty else {
            if !options.quiet { Console.standardError(configuration.offline ? "no mini-apps in the cache" : "no mini-apps published") }
            return
        }
        ListOutput.table(list, cached: cached)
    }
}

/// `list`'s output written as it is made, in chunks: the same bytes as ``Console/json(_:)`` of the
/// entries (JSONEncoder, pretty, sorted keys, slashes as they are, then DEL and C1 escaped) and as
/// ``Console/output(_:)-(Data)`` of ``Console/table(_:)``, without building the document through
/// `Encodable` or the table as one string (on a list of 10,000 apps that took most of the command's
/// time), and from the list's own bytes: a text that needs no escape is copied as it is.
enum ListOutput {
    /// The JSON array of the records of `list` (not empty: an empty one is `Console.json`'s), with
    /// whether each is cached, and for a latest version that is a rollback (by index), `rollbackFrom`:
    /// the newer version the cache knows of.
    static func json(_ list: AppListText, cached: [Bool], rollbacks: [Int: Rollback] = [:]) {
        var out = ChunkedOutput()
        var scratch: [UInt8] = []
        out.append("[\n")
        let plan = ElementPlan.shared
        list.withTexts { texts in
            plan.bytes.withUnsafeBufferPointer { prefixes in
                for (index, entry) in list.entries.enumerated() {
                    out.append(index == 0 ? "  {" : ",\n  {")
                    var first = true
                    for step in plan.members {
                        switch step.kind {
                        case .cached:
                            out.member(prefixes, step, first: first)
                            out.append(cached[index] ? "true" as StaticString : "false")
                        case .field:
                            guard entry[slot: step.slot].isPresent else { continue }
                            out.member(prefixes, step, first: first)
                            out.jsonString(entry[slot: step.slot], texts, &scratch)
                        case .rollbackFrom:
                            guard let rollback = rollbacks[index] else { continue }
                            out.member(prefixes, step, first: first)
                            ConsoleJSON.version(rollback.newer, indent: 4).withUnsafeBufferPointer { out.append($0) }
                        case .version:
                            out.member(prefixes, step, first: first)
                            out.append("{")
                            for (position, field) in plan.versionMembers.enumerated() {
                                out.member(prefixes, field, first: position == 0)
                                out.jsonString(entry[slot: field.slot], texts, &scratch)
                            }
                            out.append("\n    }")
                        }
                        first = false
                    }
                    out.append("\n  }")
                }
            }
        }
        out.append("\n]\n")
        out.flush()
    }

    /// How an element of `list --json` is written: its members sorted by key as `JSONEncoder` sorts
    /// them (the fields of ``AppRecord/recordFields``, the version's object, and the command's own
    /// `cached` and `rollbackFrom`), each with its key already written out. Plain values, so that writing
    /// 10,000 elements retains nothing.
    struct ElementPlan: Sendable {
        enum Kind: Sendable { case cached, field, rollbackFrom, version }

        /// A member: what it is, its field's slot in an entry, and where its key's bytes are in ``bytes``.
        struct Member: Sendable {
            let kind: Kind
            let slot: Int
            let prefix: Range<Int>
        }

        /// The element's members, sorted by key.
        let members: [Member]
        /// The members of its version object (``AppRecord/versionFields``), sorted by key.
        let versionMembers: [Member]
        /// Each member's `\n`, indent, quoted key and ` : `, one after the other.
        let bytes: [UInt8]

        static let shared = ElementPlan()

        private init() {
            var bytes: [UInt8] = []
            func member(_ kind: Kind, _ key: String, slot: Int = 0, indent: Int) -> (key: String, member: Member) {
                let start = bytes.count
                let text: String = "\n" + String(repeating: " ", count: indent) + "\"\(key)\" : "
                bytes += Array(text.utf8)
                return (key, Member(kind: kind, slot: slot, prefix: start..<bytes.count))
            }
            let own = [member(.cached, "cached", indent: 4), member(.rollbackFrom, "rollbackFrom", indent: 4), member(.version, AppRecord.Field.versionKey, indent: 4)]
            let fields = AppRecord.recordFields.map { member(.field, $0.key, slot: $0.slot, indent: 4) }
            members = (own + fields).sorted { $0.key < $1.key }.map(\.member)
            versionMembers = AppRecord.versionFields.sorted { $0.key < $1.key }.map { member(.field, $0.key, slot: $0.slot, indent: 6).member }
            self.bytes = bytes
        }
    }

    /// The table of the records of `list` (ID, NAME, VERSION, VERSION ID, CACHED) as ``Console/table(_:)``
    /// lays it out, each cell made terminal-safe as ``Console/output(_:)-(Data)`` makes the whole text,
    /// written in chunks.
    static func table(_ list: AppListText, cached: [Bool]) {
        list.withTexts { texts in
            func row(_ index: Int) -> [Cell] {
                let entry = list.entries[index]
                return [
                    Cell(texts, entry[.id]),
                    entry[.displayName].isPresent ? Cell(texts, entry[.displayName]) : Cell("-"),
                    entry[.versionTag].isPresent ? Cell(texts, entry[.versionTag]) : Cell("-"),
                    Cell(texts, entry[.versionId]),
                    Cell(cached[index] ? "yes" : "no"),
                ]
            }
            let header: [Cell] = [Cell("ID"), Cell("NAME"), Cell("VERSION"), Cell("VERSION ID"), Cell("CACHED")]
            var widths = header.map(\.width)
            for index in list.entries.indices {
                for (column, cell) in row(index).enumerated() { widths[column] = max(widths[column], cell.width) }
            }
            var out = ChunkedOutput()
            for index in -1..<list.entries.count {
                if index >= 0 { out.append(UInt8(ascii: "\n")) }
                for (column, cell) in (index < 0 ? header : row(index)).enumerated() {
                    if column > 0 { out.append("  ") }
                    cell.write(texts, padded: column < widths.count - 1 ? widths[column] : nil, &out)
                }
            }
            out.append(UInt8(ascii: "\n"))
            out.flush()
        }
    }

    /// A cell of the table: a text of the list, or a word of the command's own.
    private struct Cell {
        let text: AppListText.Text?
        let word: StaticString
        /// Its count of characters.
        let width: Int

        /// Printable ASCII (every word, and a text that needs no escape): one character per byte,
        /// written as it is.
        var isPlain: Bool { text?.isPlain ?? true }

        init(_ word: StaticString) {
            self.text = nil
            self.word = word
            self.width = word.utf8CodeUnitCount
        }

        init(_ texts: AppListText.Texts, _ text: AppListText.Text) {
            self.text = text
            self.word = ""
            if text.isPlain {
                self.width = text.count
            } else {
                let cell = texts.string(text) ?? ""
                self.width = Self.isOneBytePerCharacter(cell) ? cell.utf8.count : cell.count
            }
        }

        /// ASCII without CR (CR LF is one character of two bytes): the count of characters
        /// ``Console/table(_:)`` gives the cell is its count of bytes.
        private static func isOneBytePerCharacter(_ cell: String) -> Bool {
            cell.utf8.allSatisfy { $0 < 0x80 && $0 != 0x0D }
        }

        /// The cell, terminal-safe, padded with spaces to `width` characters when given.
        func write(_ texts: AppListText.Texts, padded width: Int?, _ out: inout ChunkedOutput) {
            if isPlain {
                if let text, let utf8 = texts.utf8(text) { out.append(utf8) } else { out.append(word) }
                if let width { out.append(spaces: width - self.width) }
                return
            }
            let cell = text.flatMap(texts.string) ?? ""
            guard let width else { return out.append(Console.terminalSafe(cell)) }
            if Self.isOneBytePerCharacter(cell) {
                out.append(Console.terminalSafe(cell))
                out.append(spaces: width - cell.utf8.count)
            } else {
                out.append(Console.terminalSafe(cell.padding(toLength: width, withPad: " ", startingAt: 0)))
            }
        }
    }
}

extension ChunkedOutput {
    /// `text` as ``ConsoleJSON/string(_:_:)`` writes it, `null` when it is absent; `scratch` is for
    /// the texts that need escapes.
    mutating func jsonString(_ text: AppListText.Text, _ texts: AppListText.Texts, _ scratch: inout [UInt8]) {
        guard let utf8 = texts.utf8(text) else { return append("null") }
        if text.isPlain {
            append(UInt8(ascii: "\""))
            append(utf8)
            append(UInt8(ascii: "\""))
        } else {
            scratch.removeAll(keepingCapacity: true)
            JSONWriter.string(utf8: utf8, .console, into: &scratch)
            scratch.withUnsafeBufferPointer { append($0) }
        }
    }

    /// A comma unless `member` is its object's first, then its key as `prefixes` (``ListOutput/ElementPlan/bytes``) hold it.
    @inline(__always)
    mutating func member(_ prefixes: UnsafeBufferPointer<UInt8>, _ member: ListOutput.ElementPlan.Member, first: Bool) {
        if !first { append(UInt8(ascii: ",")) }
        append(UnsafeBufferPointer(rebasing: prefixes[member.prefix]))
    }
}

/// Bytes for stdout gathered in a buffer of 64 KiB and written each time it fills.
struct ChunkedOutput: ~Copyable {
    private static let capacity = 1 << 16
    private let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: ChunkedOutput.capacity)
    private var count = 0

    deinit {
        buffer.deallocate()
    }

    @inline(__always)
    mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let start = bytes.baseAddress else { return }
        guard count + bytes.count <= Self.capacity else { return appendAfterFlush(bytes) }
        (buffer + count).update(from: start, count: bytes.count)
        count += bytes.count
    }

    private mutating func appendAfterFlush(_ bytes: UnsafeBufferPointer<UInt8>) {
        flush()
        guard bytes.count <= Self.capacity else { return Console.output(UnsafeRawBufferPointer(bytes)) }
        append(bytes)
    }

    @inline(__always)
    mutating func append(_ literal: StaticString) {
        append(UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    mutating func append(_ text: String) {
        var text = text
        text.withUTF8 { append($0) }
    }

    mutating func append(_ byte: UInt8) {
        if count == Self.capacity { flush() }
        buffer[count] = byte
        count += 1
    }

    mutating func append(spaces: Int) {
        for _ in 0..<max(spaces, 0) { append(UInt8(ascii: " ")) }
    }

    /// Writes what is gathered.
    mutating func flush() {
        Console.output(UnsafeRawBufferPointer(start: buffer, count: count))
        count = 0
    }
}
