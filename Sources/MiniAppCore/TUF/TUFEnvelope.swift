/// A TUF metadata file as it arrived: its `signed` object (and the canonical bytes its signatures
/// cover) and its signatures, read strictly; nothing in it is trusted until a role's keys verify it.
package struct TUFEnvelope: Sendable {
    /// The `signed` object.
    package let signed: JSONValue
    /// The canonical JSON of ``signed``: what each signature covers.
    package let canonical: [UInt8]
    /// Each signature, by key id, in the order written; no key id appears twice.
    package let signatures: [(keyId: String, signature: [UInt8])]

    /// Why a file is not metadata.
    package struct Malformed: Error, Equatable, CustomStringConvertible {
        package let description: String
    }

    /// The metadata in `bytes`; ``Malformed`` when it is not one JSON object with a `signed` object that
    /// has a canonical form and a `signatures` array of `{"keyid", "sig"}` (hex) with no key id twice
    /// (the specification's "MUST be unique": a repeated signature is refused, not counted once).
    package init(_ bytes: [UInt8]) throws(Malformed) {
        guard case .object(let fields)? = JSONReader.value(bytes, maxDepth: 32) else { throw Malformed(description: "it is not a JSON object") }
        guard let signed = fields["signed"], case .object = signed else { throw Malformed(description: "it has no signed object") }
        guard let canonical = CanonicalJSON.encode(signed) else { throw Malformed(description: "its signed object holds a number that is not an integer") }
        guard case .array(let items)? = fields["signatures"] else { throw Malformed(description: "it has no signatures array") }
        var signatures: [(keyId: String, signature: [UInt8])] = []
        for item in items {
            guard case .object(let parts) = item, case .string(let keyId)? = parts["keyid"], case .string(let hex)? = parts["sig"],
                  let signature = TUFKey.hex(hex) else { throw Malformed(description: "a signature is not {\"keyid\", \"sig\"} in hex") }
            guard !signatures.contains(where: { $0.keyId == keyId }) else { throw Malformed(description: "it has two signatures by key \(keyId)") }
            signatures.append((keyId, signature))
        }
        self.signed = signed
        self.canonical = canonical
        self.signatures = signatures
    }

    /// How many distinct keys among `keyIds` (of `keys`) signed ``signed``: a role is trusted when this
    /// reaches its threshold. A key id listed twice counts once; a signature by a key
    /// outside `keyIds`, by a key this client cannot use, or that does not verify counts for nothing.
    package func signers(among keyIds: [String], keys: [String: TUFKey]) -> Set<String> {
        let allowed = Set(keyIds)
        var verified: Set<String> = []
        for (keyId, signature) in signatures where allowed.contains(keyId) && !verified.contains(keyId) {
            if let key = keys[keyId], key.verifies(signature, of: canonical) { verified.insert(keyId) }
        }
        return verified
    }
}
