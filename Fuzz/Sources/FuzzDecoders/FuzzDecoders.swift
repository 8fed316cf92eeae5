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
    checkMultipart(array)
    checkAppList(bytes)
    return 0
}

/// The app list's fast reader (what `list` prints from) takes exactly the documents the record reader
/// takes, with the same elements and the same ids.
func checkAppList(_ bytes: Data) {
    let elements = AppRecord.listElements(Array(bytes))
    let text = AppListText.read(bytes)
    precondition((text == nil) == (elements == nil), "the app list's readers disagree on a document")
    guard let text, let elements else { return }
    precondition(text.elementCount == elements.count && text.entries.count == elements.compactMap { $0 }.count, "the app list's readers count differently")
    let ids = text.withTexts { texts in text.entries.map { texts.string($0[.id]) } }
    precondition(ids == elements.compactMap { $0 }.map(\.id), "the app list's readers read different ids")
}

/// A multipart/byteranges body read whole and read in pieces (cut where the first byte says) gives
/// the same parts and bytes, or the same refusal; no part's data exceeds its range.
func checkMultipart(_ bytes: [UInt8]) {
    let text = String(decoding: bytes, as: UTF8.self)
    _ = MultipartByteRanges.boundary(contentType: text)
    _ = MultipartByteRanges.contentRange(text)
    func read(_ chunks: [ArraySlice<UInt8>]) -> [MultipartByteRanges.Event]? {
        var reader = MultipartByteRanges(boundary: "B0UND")
        var events: [MultipartByteRanges.Event] = []
        do {
            for chunk in chunks { events += try reader.feed(chunk) }
        } catch {
            return nil
        }
        // Data events merged: the cut points may split them differently.
        var merged: [MultipartByteRanges.Event] = []
        var remaining: UInt64 = 0
        for event in events {
            switch event {
            case .part(let range, _):
                remaining = UInt64(range.count)
                merged.append(event)
            case .data(let data):
                precondition(UInt64(data.count) <= remaining, "more data than the part's range")
                remaining -= UInt64(data.count)
                if case .data(let previous)? = merged.last {
                    merged[merged.count - 1] = .data(previous + data)
                } else {
                    merged.append(event)
                }
            case .end:
                merged.append(event)
            }
        }
        return merged
    }
    let step = max(1, Int(bytes.first ?? 1) % 17)
    let pieces = stride(from: 0, to: bytes.count, by: step).map { bytes[$0..<min($0 + step, bytes.count)] }
    let whole = read([bytes[...]])
    let cut = read(pieces)
    precondition((whole == nil) == (cut == nil), "refused one way and not the other")
    precondition(whole == nil || whole! == cut!, "pieces read differently from the whole")
}

@_cdecl("FuzzDecoders_main")
func fuzzDecodersMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv) { data, size in
        guard let data else { return 0 }
        return fuzzDecoders(data, size)
    }
}
