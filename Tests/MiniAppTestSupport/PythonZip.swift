import Foundation
import MiniAppCore

/// Zips made by another producer than the library: Python's `zipfile`, as build pipelines zip a
/// bundle at every deploy (every entry stamped with the build's time), streamed (data descriptors),
/// with zip64 local headers (whose extra field the central directory does not repeat).
public enum PythonZip {
    public struct Options: Sendable {
        /// The year stamped on every entry (January 1st, midnight).
        public var year = 2024
        /// Written to a stream that cannot seek: every entry has a data descriptor (flag bit 3).
        public var streamed = false
        /// Every local header has a zip64 field with the sizes (its 32-bit sizes hold 0xFFFFFFFF).
        public var zip64 = false
        /// The deflate level of every entry but those of `stored`.
        public var level = 6
        /// Entries deflated at level 0: one stored block, whose first byte is `0x01`.
        public var stored: Set<String> = []
        /// Entries of `stored` whose stored block's first byte has its padding bits set (`0xF9`): the same
        /// content, CRC-32 and sizes, other compressed bytes.
        public var padded: Set<String> = []
        /// Every entry has an extended-timestamp extra field whose local copy says another time (the
        /// build's) than the central directory's (the source's): the same lengths, other bytes.
        public var localTimes = false
        /// With `localTimes`, the entries whose local copy says another time, when not every entry's.
        public var localTimesOnly: Set<String>?

        public init(
            year: Int = 2024, streamed: Bool = false, zip64: Bool = false, level: Int = 6, stored: Set<String> = [], padded: Set<String> = [],
            localTimes: Bool = false, localTimesOnly: Set<String>? = nil
        ) {
            self.year = year
            self.streamed = streamed
            self.zip64 = zip64
            self.level = level
            self.stored = stored
            self.padded = padded
            self.localTimes = localTimes
            self.localTimesOnly = localTimesOnly
        }
    }

    static let script = #"""
import json, struct, sys, zipfile
spec = json.load(open(sys.argv[1]))
class Unseekable:
    def __init__(self, f): self.f = f
    def write(self, b): return self.f.write(b)
    def flush(self): self.f.flush()
with open(sys.argv[2], 'wb') as raw:
    with zipfile.ZipFile(Unseekable(raw) if spec['streamed'] else raw, 'w') as z:
        for name, text in spec['entries']:
            info = zipfile.ZipInfo(name, date_time=(spec['year'], 1, 1, 0, 0, 0))
            info.create_system = 3
            info.external_attr = 0o100644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            if spec['localTimes']:
                info.extra = struct.pack('<HHBI', 0x5455, 5, 1, 1500000000)
            level = 0 if name in spec['stored'] else spec['level']
            try:
                info.compress_level = level
            except AttributeError:
                info._compresslevel = level
            with z.open(info, 'w', force_zip64=spec['zip64']) as f:
                f.write(text.encode())
data = bytearray(open(sys.argv[2], 'rb').read())
with zipfile.ZipFile(sys.argv[2]) as z:
    for name in spec['padded']:
        offset = z.getinfo(name).header_offset
        names, extras = struct.unpack('<HH', data[offset + 26:offset + 30])
        start = offset + 30 + names + extras
        assert data[start] == 0x01, name
        data[start] = 0xF9
    for info in z.infolist() if spec['localTimes'] else []:
        if spec['localTimesOnly'] is not None and info.filename not in spec['localTimesOnly']:
            continue
        names, extras = struct.unpack('<HH', data[info.header_offset + 26:info.header_offset + 30])
        field = info.header_offset + 30 + names
        assert extras == 9 and data[field:field + 2] == b'UT', info.filename
        data[field + 5:field + 9] = struct.pack('<I', 1600000000 + spec['year'])
open(sys.argv[2], 'wb').write(data)
"""#

    /// The zip of `files` (path to text, in path order) as Python's `zipfile` writes it with `options`.
    public static func make(_ files: [String: String], _ options: Options = Options()) async throws -> [UInt8] {
        let folder = try TemporaryDirectory.make()
        let spec = folder.appendingPathComponent("spec.json").path
        let zip = folder.appendingPathComponent("bundle.zip").path
        let document: [String: Any] = [
            "entries": files.keys.sorted().map { [$0, files[$0]!] }, "year": options.year, "streamed": options.streamed,
            "zip64": options.zip64, "level": options.level, "stored": Array(options.stored), "padded": Array(options.padded),
            "localTimes": options.localTimes, "localTimesOnly": options.localTimesOnly.map { Array($0) } as Any,
        ]
        let json = try JSONSerialization.data(withJSONObject: document)
        try await offPool { try writeTestFile(spec, [UInt8](json)) }
        let status = await runTool("/usr/bin/python3", ["-c", script, spec, zip])
        guard status == 0 else { throw CocoaError(.fileWriteUnknown) }
        return try await offPool { [UInt8](try Data(contentsOf: URL(fileURLWithPath: zip))) }
    }
}

/// The bytes of `new` that a perfect delta update from `old` fetches: all but the compressed data of
/// the entries whose method, CRC-32 and sizes are those of an entry of `old`.
public func perfectDeltaBytes(old: [UInt8], new: [UInt8]) throws -> Int {
    let folder = try TemporaryDirectory.make().path
    try writeTestFile(folder + "/old.zip", old)
    try writeTestFile(folder + "/new.zip", new)
    let kept = Set(try ZipLayout.read(folder + "/old.zip", maxEntries: 100_000).spans.map(\.dataKey))
    let reusable = try ZipLayout.read(folder + "/new.zip", maxEntries: 100_000).spans.filter { kept.contains($0.dataKey) }
    return new.count - reusable.reduce(0) { $0 + Int($1.key.compressedSize) }
}
