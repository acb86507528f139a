/// The `\u` escape of a JSON string (RFC 8259 §7): four hex digits, and a character beyond the Basic Multilingual
/// Plane as a UTF-16 surrogate pair, "\uD834\uDD1E". The one reader of it for every JSON parser in the project.
package enum JSONUnicodeEscape {
    /// Why an escape is not one; `at` is the index of the backslash of the escape at fault (the second one of a
    /// pair when the first is a high surrogate and what follows is not its low half).
    package enum Failure: Error, Hashable, Sendable {
        /// The string ends before four digits.
        case short(at: Int)
        case badHexDigit(at: Int)
        /// A high surrogate not followed by an escaped low one, or a low one alone.
        case loneSurrogate(at: Int)

        package var at: Int {
            switch self {
            case .short(let i), .badHexDigit(let i), .loneSurrogate(let i): i
            }
        }
    }

    /// Reads the escape whose four digits start at `digits` (just after `\u`): the character, and the index after
    /// the escape (after the second `\uXXXX` of a surrogate pair).
    package static func read(_ bytes: ArraySlice<UInt8>, digits: Int) -> Result<(Unicode.Scalar, end: Int), Failure> {
        let first: UInt32
        switch hex4(bytes, digits) {
        case .success(let v): first = v
        case .failure(let f): return .failure(f)
        }
        if (0xDC00...0xDFFF).contains(first) { return .failure(.loneSurrogate(at: digits - 2)) }
        guard (0xD800...0xDBFF).contains(first) else {
            // Below U+D800 or from U+E000 to U+FFFF: a scalar as it stands.
            return .success((Unicode.Scalar(first)!, digits + 4))
        }
        let next = digits + 4
        guard next + 1 < bytes.endIndex, bytes[next] == UInt8(ascii: "\\"), bytes[next + 1] == UInt8(ascii: "u")
        else { return .failure(.loneSurrogate(at: next)) }
        let low: UInt32
        switch hex4(bytes, next + 2) {
        case .success(let v): low = v
        case .failure: return .failure(.badHexDigit(at: next))
        }
        guard (0xDC00...0xDFFF).contains(low) else { return .failure(.loneSurrogate(at: next)) }
        // A pair always makes a scalar from U+10000 to U+10FFFF.
        return .success((Unicode.Scalar(0x10000 + ((first - 0xD800) << 10) + (low - 0xDC00))!, next + 6))
    }

    static func hex4(_ bytes: ArraySlice<UInt8>, _ i: Int) -> Result<UInt32, Failure> {
        guard i + 4 <= bytes.endIndex else { return .failure(.short(at: i - 2)) }
        guard let v = HexDigits.number(utf8: bytes[i..<(i + 4)], digits: 4) else {
            return .failure(.badHexDigit(at: i - 2))
        }
        return .success(UInt32(v))
    }
}

/// The two-character escapes of a JSON string (RFC 8259 §7): the one table every JSON reader in the project uses.
package enum JSONShortEscape {
    /// The octet `\` followed by `e` stands for: `"`, `\`, `/`, backspace, form feed, line feed, carriage return,
    /// tab; nil for `u` (JSONUnicodeEscape reads it) and for anything the grammar does not allow.
    @inlinable package static func octet(_ e: UInt8) -> UInt8? {
        switch e {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): e
        case UInt8(ascii: "b"): 0x08
        case UInt8(ascii: "f"): 0x0C
        case UInt8(ascii: "n"): 0x0A
        case UInt8(ascii: "r"): 0x0D
        case UInt8(ascii: "t"): 0x09
        default: nil
        }
    }
}
