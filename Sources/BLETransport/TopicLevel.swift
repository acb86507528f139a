/// The rule for a topic level the gateway builds from its configuration (a prefix level, a gateway id): one
/// `[A-Za-z0-9._-]` level of at most 64 octets, so that no `+`, `#`, `/` or NUL from a file ever shapes a topic.
/// Written once, here below both the configuration's validation and the publishing layer's `Topics`.
package enum TopicLevel {
    /// Why `level` cannot be a topic level, or nil.
    package static func problem(_ level: Substring) -> String? {
        if level.isEmpty { return "empty topic level" }
        if level.utf8.count > 64 { return "longer than 64 characters" }
        for b in level.utf8 {
            let ok =
                (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                || b == UInt8(ascii: "-") || b == UInt8(ascii: "_") || b == UInt8(ascii: ".")
            if !ok { return "only letters, digits, '-', '_' and '.' are allowed" }
        }
        return nil
    }
}
