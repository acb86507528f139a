import Testing

@testable import BLETransport

/// The `\u` escape as every JSON reader of the project takes it (RFC 8259 §7). Indices point into the text, so a
/// reader's error can name where the fault is: the backslash of the escape at fault.
@Suite struct JSONUnicodeEscapeTests {
    /// Reads the escape of `text` whose `\u` starts at `at`.
    static func read(_ text: String, at: Int) -> Result<(Unicode.Scalar, end: Int), JSONUnicodeEscape.Failure> {
        JSONUnicodeEscape.read(Array(text.utf8)[...], digits: at + 2)
    }

    @Test func aCharacterOfTheBasicPlaneIsFourDigits() {
        guard case .success(let (scalar, end)) = Self.read(#"x\u00e9y"#, at: 1) else {
            Issue.record("not read")
            return
        }
        #expect(scalar == "é" && end == 7)
    }

    @Test func aCharacterBeyondItIsASurrogatePair() {
        // U+1D11E MUSICAL SYMBOL G CLEF, RFC 8259 §7's own example.
        guard case .success(let (scalar, end)) = Self.read(#"\uD834\uDD1E!"#, at: 0) else {
            Issue.record("not read")
            return
        }
        #expect(scalar.value == 0x1D11E && end == 12)
    }

    @Test func halvesOfAPairAloneAreRefusedWhereTheyAre() {
        if case .failure(let f) = Self.read(#"ab\uDD1E"#, at: 2) {
            #expect(f == .loneSurrogate(at: 2))
        } else {
            Issue.record("a low surrogate alone was read")
        }
        // A high one followed by text, by an escape that is not a low half, or by the end of the text.
        for text in [#"\uD834xxxxxx"#, #"\uD834\u0041"#, #"\uD834"#] {
            if case .failure(let f) = Self.read(text, at: 0) {
                #expect(f == .loneSurrogate(at: 6), "\(text)")
            } else {
                Issue.record("\(text) was read")
            }
        }
    }

    @Test func digitsShortOrNotHexAreRefused() {
        if case .failure(let f) = Self.read(#"\u12"#, at: 0) {
            #expect(f == .short(at: 0))
        } else {
            Issue.record("read")
        }
        if case .failure(let f) = Self.read(#"\u12G4"#, at: 0) {
            #expect(f == .badHexDigit(at: 0))
        } else {
            Issue.record("read")
        }
        // The low half's digits: the fault is the second escape.
        if case .failure(let f) = Self.read(#"\uD834\uDDZZ"#, at: 0) {
            #expect(f == .badHexDigit(at: 6))
        } else {
            Issue.record("read")
        }
        // Fullwidth digits are not hex digits, whatever Character.isHexDigit says.
        if case .failure(let f) = Self.read("\\u１２３４", at: 0) {
            #expect(f == .badHexDigit(at: 0))
        } else {
            Issue.record("read")
        }
    }
}
