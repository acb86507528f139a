import Testing

@testable import BLETransport

/// The one hex formatter and parser every layer uses (codes as the specification prints them, bytes as topics and
/// tools show them, and what people type).
@Suite struct HexTests {
    @Test func codesPrintUpperCaseZeroPaddedAndAreNeverCut() {
        #expect(upperHex(UInt8(0x0C), digits: 2) == "0C")
        #expect(upperHex(UInt16(0x2A6E), digits: 4) == "2A6E")
        #expect(upperHex(UInt16(0x4), digits: 4) == "0004")
        #expect(upperHex(0x12345, digits: 4) == "12345")
    }

    @Test func bytesPrintLowerCaseByDefault() {
        #expect(HexDigits.string([0x00, 0xAB, 0x0F]) == "00ab0f")
        #expect(HexDigits.string([0x00, 0xAB, 0x0F], upper: true) == "00AB0F")
        var out: [UInt8] = []
        HexDigits.append(0xBEEF, digits: 4, upper: false, to: &out)
        #expect(out == Array("beef".utf8))
    }

    @Test func parsingTakesTheSeparatorsPeopleWriteAndRefusesTheRest() {
        #expect(HexDigits.parse("01 0c20 02 0100") == [0x01, 0x0C, 0x20, 0x02, 0x01, 0x00])
        #expect(HexDigits.parse("AA:bb-Cc") == [0xAA, 0xBB, 0xCC])
        #expect(HexDigits.parse("") == [])
        #expect(HexDigits.parse("abc") == nil)  // odd
        #expect(HexDigits.parse("0g") == nil)
        #expect(HexDigits.parse("0x01") == nil)
        #expect(HexDigits.parse("0102", count: 2) == [0x01, 0x02])
        #expect(HexDigits.parse("0102", count: 3) == nil)
    }

    @Test func keysAndIdentifiersAreExactlyTheirDigitsAndNothingElse() {
        #expect(
            HexDigits.parseDigits("231d39c1D7CC1AB1", count: 8) == [0x23, 0x1D, 0x39, 0xC1, 0xD7, 0xCC, 0x1A, 0xB1])
        #expect(HexDigits.parseDigits("231d39c1d7cc1ab1", count: 7) == nil)
        #expect(HexDigits.parseDigits("23:1d", count: 2) == nil)  // no separators in a key
        #expect(HexDigits.parseDigits("23 1d", count: 2) == nil)
        #expect(HexDigits.number("00e2c56db5df", digits: 12) == 0x00E2_C56D_B5DF)
        #expect(HexDigits.number("+e2c56db5df", digits: 11) == nil)  // a sign `UInt64(_:radix:)` would take
        #expect(HexDigits.number("0x1f", digits: 4) == nil)
        #expect(HexDigits.number("abc", digits: 4) == nil)
        #expect(HexDigits.number(String(repeating: "f", count: 17), digits: 17) == nil)  // beyond 64 bits
    }

    /// `Character.isHexDigit` is true for the fullwidth forms; the bytes of none of them are a digit here.
    @Test func fullwidthDigitsAreNotHexDigits() {
        let fullwidth = "\u{FF11}\u{FF41}"
        #expect(fullwidth.allSatisfy { $0.isHexDigit })
        #expect(HexDigits.parse(fullwidth) == nil)
        #expect(HexDigits.number(fullwidth, digits: fullwidth.utf8.count) == nil)
        #expect(HexDigits.nibble(UInt8(ascii: "g")) == nil)
        #expect(HexDigits.nibble(UInt8(ascii: "F")) == 15)
    }
}
