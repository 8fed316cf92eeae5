import Foundation
import FuzzSupport
import MiniAppCore

/// The signature and key parsers on arbitrary bytes: the first bytes pick what to feed, the rest is
/// the input. A random input must never verify, and nothing may crash.
let fuzzKey = try! SigningKey.generate()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSignature(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 1 else { return 0 }
    let selector = data[0]
    let rest = Data(bytes: data + 1, count: size - 1)
    let text = String(decoding: rest, as: UTF8.self)
    switch selector % 4 {
    case 0:
        _ = try? PublicKey(pem: text)
    case 1:
        _ = try? PublicKey(point: [UInt8](rest))
    case 2:
        _ = try? BundleSignature.publicKey(from: PublicKeyRecord(id: "k", ecKey: rest.base64EncodedString(), pemKey: text))
    default:
        let verified = (try? BundleSignature.verify(rest.base64EncodedString(), versionId: "v", sha256: [UInt8](repeating: 0, count: 32), key: fuzzKey.publicKey, keyId: nil)) != nil
        precondition(!verified, "a random signature verified")
    }
    return 0
}

@_cdecl("FuzzSignature_main")
func fuzzSignatureMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv) { data, size in
        guard let data else { return 0 }
        return fuzzSignature(data, size)
    }
}
