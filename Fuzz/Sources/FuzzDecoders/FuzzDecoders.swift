import Foundation
import FuzzSupport
@testable import MiniAppCore

/// The manifest, platform answer and cache file decoders on arbitrary bytes: decode or refuse, never
/// crash; and the cache's own JSON reader reads what it accepts as Foundation does.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDecoders(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Data(bytes: data, count: size)
    let decoder = JSONDecoder()
    if let manifest = try? decoder.decode(BundleManifest.self, from: bytes) {
        _ = ManifestDiff(from: manifest, to: BundleManifest())
    }
    if let records = try? decoder.decode([AppRecord].self, from: bytes) {
        for record in records { precondition(Identifier.isValid(record.id) && Identifier.isValid(record.version.versionId)) }
    }
    _ = try? decoder.decode(FileManifest.self, from: bytes)
    _ = try? decoder.decode(PublicKeyRecord.self, from: bytes)
    _ = try? PermissionInterchange.parse(bytes)
    _ = RecordCoding.parse(String(decoding: bytes, as: UTF8.self))
    _ = BundleFileList(decoding: bytes)
    let array = Array(bytes)
    if let value = JSONReader.value(array) {
        // JSONDecoder refuses some valid numbers (`0e2`: a zero followed by an exponent), which
        // JSONSerialization reads; only there may the reader accept what JSONDecoder refuses.
        if let decoded = try? decoder.decode(JSONValue.self, from: bytes) {
            precondition(decoded == value, "JSONReader reads differently from JSONDecoder")
        } else {
            precondition((try? JSONSerialization.jsonObject(with: bytes, options: [.fragmentsAllowed])) != nil, "JSONReader accepts what Foundation refuses")
        }
    }
    _ = InstallRecord(json: array)
    return 0
}

@_cdecl("FuzzDecoders_main")
func fuzzDecodersMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv) { data, size in
        guard let data else { return 0 }
        return fuzzDecoders(data, size)
    }
}
