import CMiniAppArchive
import Foundation
import MiniAppKit
public import MiniAppCore

/// A signed bundle made at test time.
public struct SignedBundle: Sendable {
    public var zip: [UInt8]
    public var sha256: String
    public var signature: String
    public var versionId: String
}

/// Makes real bundle folders, zips and signatures for tests.
public enum BundleFactory {
    /// A small web app: index.html, a script, a stylesheet, a manifest.json and a locale file.
    public static let helloFiles: [String: String] = [
        "index.html": "<!doctype html><html><head><link rel=stylesheet href=css/app.css></head><body><script src=js/app.js></script></body></html>",
        "js/app.js": "document.body.append('hello')",
        "css/app.css": "body { font-family: sans-serif }",
        "manifest.json": #"{"reqPermissions": [{"name": "rakuten.miniapp.user.USER_NAME", "reason": "__MANIFEST_greet__"}], "customMetaData": {"theme": "dark"}}"#,
        "_locale/default/manifest.json": #"{"greet": "to greet you"}"#,
    ]

    /// Writes `files` (path to text) into a new folder and returns its path.
    public static func folder(_ files: [String: String]) throws -> String {
        let root = try TemporaryDirectory.make().appendingPathComponent("bundle").path
        for (path, text) in files {
            let full = root + "/" + path
            try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try writeTestFile(full, Array(text.utf8))
        }
        return root
    }

    /// The deterministic zip of `files`.
    public static func zip(_ files: [String: String]) throws -> [UInt8] {
        let folder = try folder(files)
        let zip = folder + ".zip"
        try ArchiveWriter.zip(directory: folder, to: zip)
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: zip)))
    }

    /// `zip` signed for `versionId` with `key`, the platform's way.
    public static func sign(_ zip: [UInt8], versionId: String, key: SigningKey) throws -> SignedBundle {
        let digest = SHA256Digest.hash(zip)
        return SignedBundle(zip: zip, sha256: digest.hexString, signature: try BundleSignature.sign(versionId: versionId, sha256: digest, with: key), versionId: versionId)
    }

    /// The hello bundle plus 120 incompressible files of 16 KiB (about 2 MB of zip): a bundle to
    /// update. Each version after the first changes `changed` of them, scattered.
    public static func updateFiles(version: Int, changed: Int = 3) -> [String: String] {
        var files = helloFiles
        let stride = 120 / max(changed, 1)
        for (index, part) in updateParts.enumerated() {
            var bytes = part
            if version > 1, index % stride == 5 % stride, index / stride < changed { bytes[0] = UInt8(ascii: "#") }
            files["assets/part-\(index).js"] = String(decoding: bytes, as: UTF8.self)
        }
        return files
    }

    /// The 120 files of ``updateFiles(version:changed:)``: printable ASCII from a seeded generator, made
    /// once (tests build from them often, on Swift's cooperative pool, in debug builds).
    private static let updateParts: [[UInt8]] = {
        var generator = SeededGenerator(seed: 7)
        return (0..<120).map { _ in
            var part = [UInt8](repeating: 0, count: 16384)
            part.withUnsafeMutableBufferPointer { buffer in
                var index = 0
                while index < buffer.count {
                    // 94 printable characters; 94^8 < 2^64, so one draw gives eight of them.
                    var word = generator.next()
                    for _ in 0..<8 where index < buffer.count {
                        buffer[index] = 33 + UInt8(word % 94)
                        word /= 94
                        index += 1
                    }
                }
            }
            return part
        }
    }()

    /// A deflated zip with one file of `size` zero bytes: a compression bomb.
    public static func zeroBomb(size: Int, name: String = "index.html") throws -> [UInt8] {
        let path = try TemporaryDirectory.make().appendingPathComponent("bomb.zip").path
        let archive = archive_write_new()
        defer { archive_write_free(archive) }
        archive_write_set_format_zip(archive)
        archive_write_zip_set_compression_deflate(archive)
        archive_write_open_filename(archive, path)
        let entry = archive_entry_new()
        defer { archive_entry_free(entry) }
        archive_entry_set_pathname(entry, name)
        archive_entry_set_filetype(entry, CMiniAppArchive_AE_IFREG())
        archive_entry_set_perm(entry, 0o644)
        archive_entry_set_size(entry, la_int64_t(size))
        archive_write_header(archive, entry)
        let chunk = [UInt8](repeating: 0, count: 1 << 20)
        var left = size
        while left > 0 {
            let count = min(left, chunk.count)
            archive_write_data(archive, chunk, count)
            left -= count
        }
        archive_write_close(archive)
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    }
}

/// A deterministic random number generator (SplitMix64).
public struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64

    public init(seed: UInt64) {
        state = seed
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}
