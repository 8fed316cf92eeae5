/// Decimal numbers written in ASCII, as the cache's own files and timestamps hold them.
enum ASCIIDigits {
    /// The value of `digits`: 1 to 18 of `0`-`9` and nothing else (no sign, no space), else `nil`.
    package static func value<Digits: Collection<UInt8>>(_ digits: Digits) -> Int64? {
        guard !digits.isEmpty, digits.count <= 18 else { return nil }
        var value: Int64 = 0
        for digit in digits {
            guard digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int64(digit - UInt8(ascii: "0"))
        }
        return value
    }
}
