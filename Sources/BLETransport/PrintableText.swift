/// Text from the air (a device's name, a URL) made fit to show on one line: in a terminal table, a JSON name Home
/// Assistant lists. A name is the advertiser's to choose, so it may carry a tab or a line break that breaks a table,
/// DEL, a C1 control such as U+009B (CSI, which a terminal takes as the start of an escape sequence and so lets a
/// neighbour's device rewrite the screen), or a format character (a bidi override that reorders what follows).
public enum PrintableText {
    /// One line of `s`: white space of any kind (tabs, line and paragraph separators, NEL) as one space, leading and
    /// trailing white space gone; every other control or format character, and U+FFFD (what invalid UTF-8 decoded to),
    /// replaced by `replacement` when given, else dropped.
    public static func line(_ s: String, replacement: Unicode.Scalar? = nil) -> String {
        var out = String.UnicodeScalarView()
        var space = false
        for scalar in s.unicodeScalars {
            // White space first: a tab or a line break is a control character too, but it separates words.
            if scalar.properties.isWhitespace {
                space = !out.isEmpty
                continue
            }
            let shown: Unicode.Scalar?
            switch scalar.properties.generalCategory {
            case .control, .format, .surrogate, .privateUse, .unassigned: shown = replacement
            default: shown = scalar == "\u{FFFD}" ? replacement : scalar
            }
            guard let shown else { continue }
            if space {
                out.append(" ")
                space = false
            }
            out.append(shown)
        }
        return String(out)
    }
}
