/// The project's one hex formatter and parser: codes printed as the specification and btmon print them, bytes as
/// the topics, payloads and tools show them.

/// Upper-case hex, zero-padded to `digits` (longer values are not cut): the form the specification and btmon
/// print, as in "0x0C". Package-wide so the layers above print codes the same way.
package func upperHex<T: BinaryInteger>(_ v: T, digits: Int) -> String {
    let s = String(v, radix: 16, uppercase: true)
    return s.count >= digits ? s : String(repeating: "0", count: digits - s.count) + s
}

/// Hex formatting into byte buffers, without intermediate strings.
public enum HexDigits {
    @usableFromInline static let upperDigits: StaticString = "0123456789ABCDEF"
    @usableFromInline static let lowerDigits: StaticString = "0123456789abcdef"

    /// Appends the low `digits` nibbles of `value`, most significant first.
    @inlinable public static func append(_ value: UInt64, digits: Int, upper: Bool, to out: inout [UInt8]) {
        let table = upper ? upperDigits : lowerDigits
        var shift = (digits - 1) * 4
        while shift >= 0 {
            let nibble = Int((value >> UInt64(shift)) & 0xF)
            out.append(table.utf8Start[nibble])
            shift -= 4
        }
    }

    /// Appends each byte as two digits.
    @inlinable public static func append(bytes: some Sequence<UInt8>, upper: Bool, to out: inout [UInt8]) {
        for b in bytes { append(UInt64(b), digits: 2, upper: upper, to: &out) }
    }

    /// Lower-case hex of some bytes, as a String.
    public static func string(_ bytes: some Sequence<UInt8>, upper: Bool = false) -> String {
        var out = [UInt8]()
        append(bytes: bytes, upper: upper, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes `text` spells in hex, two digits each, ignoring the separators people write (`:`, `-`, spaces);
    /// nil for an odd number of digits or anything else, and when `count` is given and not met.
    public static func parse(_ text: some StringProtocol, count: Int? = nil) -> [UInt8]? {
        parse(
            text.utf8, count: count,
            skipping: { $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: "-") || $0 == 0x20 || $0 == 0x09 })
    }

    /// Exactly `count` bytes as `2 * count` hex digits and nothing else (keys, identifiers): nil otherwise.
    public static func parseDigits(_ text: some StringProtocol, count: Int) -> [UInt8]? {
        parse(text.utf8, count: count, skipping: { _ in false })
    }

    /// Any number of bytes as twice as many hex digits and nothing else (a value to write); nil otherwise.
    public static func parseDigits(_ text: some StringProtocol) -> [UInt8]? {
        let n = text.utf8.count
        return n % 2 == 0 ? parseDigits(text, count: n / 2) : nil
    }

    /// The number `text` spells in at most 16 hex digits and nothing else (no sign, no prefix): nil otherwise.
    public static func number(_ text: some StringProtocol, digits: Int) -> UInt64? {
        number(utf8: text.utf8, digits: digits)
    }

    /// `number` over UTF-8 bytes (a JSON reader's `\uXXXX`).
    public static func number(utf8: some Collection<UInt8>, digits: Int) -> UInt64? {
        guard digits <= 16, utf8.count == digits else { return nil }
        var v: UInt64 = 0
        for c in utf8 {
            guard let n = nibble(c) else { return nil }
            v = v << 4 | UInt64(n)
        }
        return v
    }

    /// The value of one ASCII hex digit; nil for anything else (the fullwidth forms `Character.isHexDigit` accepts
    /// included).
    @inlinable public static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func parse(
        _ utf8: some Sequence<UInt8>, count: Int?, skipping isSeparator: (UInt8) -> Bool
    ) -> [UInt8]? {
        var out: [UInt8] = []
        var high: UInt8?
        for c in utf8 {
            guard let v = nibble(c) else {
                if isSeparator(c) { continue }
                return nil
            }
            if let h = high {
                out.append(h << 4 | v)
                high = nil
            } else {
                high = v
            }
        }
        guard high == nil, count.map({ $0 == out.count }) ?? true else { return nil }
        return out
    }
}
