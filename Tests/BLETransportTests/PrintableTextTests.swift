import Testing

@testable import BLETransport

/// A device's name on one line, with nothing a terminal would act on.
struct PrintableTextTests {
    @Test(arguments: [
        ("Thermo\tlobby\n", "Thermo lobby"),
        ("a\u{7F}b", "a?b"),  // DEL
        ("a\u{9B}31mb", "a?31mb"),  // C1 CSI: a terminal's escape sequence
        ("a\u{1B}[2Jb", "a?[2Jb"),  // ESC
        ("a\u{202E}cba", "a?cba"),  // right-to-left override
        ("a\u{85}b\u{2028}c", "a b c"),  // NEL and the line separator are line breaks: white space
        ("\u{FFFD}x", "?x"),  // what invalid UTF-8 decoded to
        ("Café ☕", "Café ☕"),
    ])
    func everyControlAndFormatCharacterIsReplacedAndWhiteSpaceIsOneSpace(_ name: String, _ shown: String) {
        #expect(PrintableText.line(name, replacement: "?") == shown)
    }

    @Test func withoutAReplacementTheyAreDropped() {
        #expect(PrintableText.line("  Thermo\u{7}\tlobby\u{9B} ") == "Thermo lobby")
        #expect(PrintableText.line("\u{1}\u{2}").isEmpty)
    }
}
