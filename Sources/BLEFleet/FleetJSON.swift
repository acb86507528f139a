import BLETransport

/// One JSON object's top-level members, read in a single pass over the payload's bytes, for the payloads that
/// arrive tens of thousands of times a second (beacon summaries, raw reports, sensor readings, RSSI): Foundation's
/// JSONDecoder spent about 95 % of the fleet service's CPU on them. The whole document is checked (RFC 8259
/// grammar, UTF-8 strings, nothing after the object), nested values are checked and skipped, and a member is
/// decoded only when asked for, with the same strictness as the `Decodable` payloads: a required field that is
/// missing, or any field of the wrong type, is an error naming it.
struct FleetJSON {
    enum Kind: UInt8 { case string, number, bool, null, nested }

    struct Member {
        var key: Range<Int>
        var kind: Kind
        var value: Range<Int>
        /// The string (key or value) holds a backslash escape and must be unescaped to be read.
        var keyEscaped: Bool
        var valueEscaped: Bool
    }

    enum Failure: Error, Equatable {
        /// Not a JSON object; `offset` is where reading stopped.
        case notJSON(offset: Int)
        case missingField(String)
        case wrongType(String)
        case duplicateKey(String)
    }

    let bytes: [UInt8]
    private(set) var members: [Member] = []

    /// Nesting deeper than this is refused (the schema's payloads nest two levels).
    static let maximumDepth = 32

    init(_ bytes: [UInt8]) throws(Failure) {
        self.bytes = bytes
        members.reserveCapacity(16)
        var i = 0
        skipSpace(&i)
        try expect(UInt8(ascii: "{"), at: &i)
        skipSpace(&i)
        if peek(i) == UInt8(ascii: "}") {
            i += 1
        } else {
            while true {
                skipSpace(&i)
                guard peek(i) == UInt8(ascii: "\"") else { throw .notJSON(offset: i) }
                let (key, keyEscaped) = try string(at: &i)
                skipSpace(&i)
                try expect(UInt8(ascii: ":"), at: &i)
                skipSpace(&i)
                let start = i
                let (kind, valueEscaped) = try value(at: &i, depth: 1)
                var range = start..<i
                if kind == .string { range = (start + 1)..<(i - 1) }
                members.append(
                    Member(
                        key: key, kind: kind, value: range, keyEscaped: keyEscaped,
                        valueEscaped: valueEscaped))
                skipSpace(&i)
                if peek(i) == UInt8(ascii: ",") {
                    i += 1
                    continue
                }
                try expect(UInt8(ascii: "}"), at: &i)
                break
            }
        }
        skipSpace(&i)
        guard i == bytes.count else { throw .notJSON(offset: i) }
        // Duplicate keys are refused: which one a reader takes is unspecified (RFC 8259 §4), and no gateway writes them.
        if members.count > 1 {
            for a in 1..<members.count {
                for b in 0..<a where keysEqual(members[a], members[b]) {
                    throw .duplicateKey(keyString(members[a]))
                }
            }
        }
    }

    // MARK: Typed access (nil: absent or null)

    func string(_ name: String) throws(Failure) -> String? {
        guard let m = member(name), m.kind != .null else { return nil }
        guard m.kind == .string else { throw .wrongType(name) }
        if !m.valueEscaped {
            guard let s = String(validating: bytes[m.value], as: UTF8.self) else { throw .wrongType(name) }
            return s
        }
        guard let s = Self.unescape(bytes[m.value]) else { throw .wrongType(name) }
        return s
    }

    func double(_ name: String) throws(Failure) -> Double? {
        guard let m = member(name), m.kind != .null else { return nil }
        guard m.kind == .number, let d = Double(String(decoding: bytes[m.value], as: UTF8.self)), d.isFinite else {
            throw .wrongType(name)
        }
        return d
    }

    func int(_ name: String) throws(Failure) -> Int? {
        guard let d = try double(name) else { return nil }
        guard d == d.rounded(), abs(d) < 9.007_199_254_740_992e15 else { throw .wrongType(name) }
        return Int(d)
    }

    func bool(_ name: String) throws(Failure) -> Bool? {
        guard let m = member(name), m.kind != .null else { return nil }
        guard m.kind == .bool else { throw .wrongType(name) }
        return bytes[m.value.lowerBound] == UInt8(ascii: "t")
    }

    /// A member that is an object, read as one (nil: absent or null).
    func object(_ name: String) throws(Failure) -> FleetJSON? {
        guard let m = member(name), m.kind != .null else { return nil }
        guard m.kind == .nested, bytes[m.value.lowerBound] == UInt8(ascii: "{") else { throw .wrongType(name) }
        return try FleetJSON(Array(bytes[m.value]))
    }

    /// Every member that is a number, by key (other members are left out).
    var numbers: [String: Double] {
        var out: [String: Double] = [:]
        for m in members where m.kind == .number {
            if let d = Double(String(decoding: bytes[m.value], as: UTF8.self)), d.isFinite { out[keyString(m)] = d }
        }
        return out
    }

    func required<T>(_ value: T?, _ name: String) throws(Failure) -> T {
        guard let value else { throw member(name) == nil ? .missingField(name) : .wrongType(name) }
        return value
    }

    func member(_ name: String) -> Member? {
        var name = name
        return name.withUTF8 { key in
            for m in members {
                if m.keyEscaped {
                    if keyString(m) == String(decoding: key, as: UTF8.self) { return m }
                } else if m.key.count == key.count, bytes[m.key].elementsEqual(key) {
                    return m
                }
            }
            return nil
        }
    }

    // MARK: Grammar

    private func peek(_ i: Int) -> UInt8? { i < bytes.count ? bytes[i] : nil }

    private func skipSpace(_ i: inout Int) {
        while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x0A || bytes[i] == 0x0D || bytes[i] == 0x09 { i += 1 }
    }

    private func expect(_ c: UInt8, at i: inout Int) throws(Failure) {
        guard peek(i) == c else { throw .notJSON(offset: i) }
        i += 1
    }

    /// A string at `i` (its opening quote): the range inside the quotes, and whether it holds an escape.
    private func string(at i: inout Int) throws(Failure) -> (Range<Int>, Bool) {
        i += 1
        let start = i
        var escaped = false
        while i < bytes.count {
            let c = bytes[i]
            if c == UInt8(ascii: "\"") {
                i += 1
                return (start..<(i - 1), escaped)
            } else if c == UInt8(ascii: "\\") {
                escaped = true
                guard let e = peek(i + 1) else { break }
                if JSONShortEscape.octet(e) != nil {
                    i += 2
                } else if e == UInt8(ascii: "u") {
                    switch JSONUnicodeEscape.read(bytes[...], digits: i + 2) {
                    case .success(let (_, end)): i = end
                    case .failure(let failure): throw .notJSON(offset: failure.at)
                    }
                } else {
                    throw .notJSON(offset: i)
                }
            } else if c < 0x20 {
                throw .notJSON(offset: i)  // control characters must be escaped
            } else if c < 0x80 {
                i += 1
            } else {
                i = try utf8Scalar(at: i)
            }
        }
        throw .notJSON(offset: i)
    }

    /// The end of the well-formed UTF-8 sequence starting at `i` (Unicode §3.9, Table 3-7: no overlong forms, no
    /// surrogates, nothing above U+10FFFF).
    private func utf8Scalar(at i: Int) throws(Failure) -> Int {
        let c = bytes[i]
        let (n, low, high): (Int, UInt8, UInt8)
        switch c {
        case 0xC2...0xDF: (n, low, high) = (2, 0x80, 0xBF)
        case 0xE0: (n, low, high) = (3, 0xA0, 0xBF)
        case 0xE1...0xEC, 0xEE...0xEF: (n, low, high) = (3, 0x80, 0xBF)
        case 0xED: (n, low, high) = (3, 0x80, 0x9F)
        case 0xF0: (n, low, high) = (4, 0x90, 0xBF)
        case 0xF1...0xF3: (n, low, high) = (4, 0x80, 0xBF)
        case 0xF4: (n, low, high) = (4, 0x80, 0x8F)
        default: throw .notJSON(offset: i)
        }
        guard i + n <= bytes.count, (low...high).contains(bytes[i + 1]),
            bytes[(i + 2)..<(i + n)].allSatisfy({ $0 & 0xC0 == 0x80 })
        else { throw .notJSON(offset: i) }
        return i + n
    }

    private func value(at i: inout Int, depth: Int) throws(Failure) -> (Kind, Bool) {
        guard let c = peek(i) else { throw .notJSON(offset: i) }
        switch c {
        case UInt8(ascii: "\""):
            let (_, escaped) = try string(at: &i)
            return (.string, escaped)
        case UInt8(ascii: "t"):
            try literal("true", at: &i)
            return (.bool, false)
        case UInt8(ascii: "f"):
            try literal("false", at: &i)
            return (.bool, false)
        case UInt8(ascii: "n"):
            try literal("null", at: &i)
            return (.null, false)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            try skipNested(at: &i, depth: depth)
            return (.nested, false)
        default:
            try number(at: &i)
            return (.number, false)
        }
    }

    private func literal(_ word: StaticString, at i: inout Int) throws(Failure) {
        let n = word.utf8CodeUnitCount
        guard i + n <= bytes.count else { throw .notJSON(offset: i) }
        for k in 0..<n where bytes[i + k] != word.utf8Start[k] { throw .notJSON(offset: i + k) }
        i += n
    }

    /// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
    private func number(at i: inout Int) throws(Failure) {
        let start = i
        if peek(i) == UInt8(ascii: "-") { i += 1 }
        func digits(_ i: inout Int) -> Int {
            let s = i
            while let d = peek(i), d >= UInt8(ascii: "0"), d <= UInt8(ascii: "9") { i += 1 }
            return i - s
        }
        if peek(i) == UInt8(ascii: "0") {
            i += 1
        } else if digits(&i) == 0 {
            throw .notJSON(offset: start)
        }
        if peek(i) == UInt8(ascii: ".") {
            i += 1
            guard digits(&i) > 0 else { throw .notJSON(offset: i) }
        }
        if peek(i) == UInt8(ascii: "e") || peek(i) == UInt8(ascii: "E") {
            i += 1
            if peek(i) == UInt8(ascii: "+") || peek(i) == UInt8(ascii: "-") { i += 1 }
            guard digits(&i) > 0 else { throw .notJSON(offset: i) }
        }
    }

    /// An object or array, checked member by member and skipped.
    private func skipNested(at i: inout Int, depth: Int) throws(Failure) {
        guard depth < Self.maximumDepth else { throw .notJSON(offset: i) }
        let isObject = bytes[i] == UInt8(ascii: "{")
        let close = isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
        i += 1
        skipSpace(&i)
        if peek(i) == close {
            i += 1
            return
        }
        while true {
            skipSpace(&i)
            if isObject {
                guard peek(i) == UInt8(ascii: "\"") else { throw .notJSON(offset: i) }
                _ = try string(at: &i)
                skipSpace(&i)
                try expect(UInt8(ascii: ":"), at: &i)
                skipSpace(&i)
            }
            _ = try value(at: &i, depth: depth + 1)
            skipSpace(&i)
            if peek(i) == UInt8(ascii: ",") {
                i += 1
                continue
            }
            try expect(close, at: &i)
            return
        }
    }

    // MARK: Escapes

    private func keysEqual(_ a: Member, _ b: Member) -> Bool {
        if a.keyEscaped || b.keyEscaped { return keyString(a) == keyString(b) }
        return a.key.count == b.key.count && bytes[a.key].elementsEqual(bytes[b.key])
    }

    private func keyString(_ m: Member) -> String {
        (m.keyEscaped ? Self.unescape(bytes[m.key]) : String(validating: bytes[m.key], as: UTF8.self)) ?? "?"
    }

    /// The string a (grammar-checked) escaped JSON string stands for; nil for invalid UTF-8 or a lone surrogate.
    static func unescape(_ s: ArraySlice<UInt8>) -> String? {
        var out: [UInt8] = []
        out.reserveCapacity(s.count)
        var i = s.startIndex
        while i < s.endIndex {
            let c = s[i]
            guard c == UInt8(ascii: "\\") else {
                out.append(c)
                i += 1
                continue
            }
            let e = s[i + 1]
            i += 2
            if let c = JSONShortEscape.octet(e) {
                out.append(c)
            } else {
                // The grammar was checked: anything else is `\u`.
                guard case .success(let (scalar, end)) = JSONUnicodeEscape.read(s, digits: i) else { return nil }
                i = end
                out.append(contentsOf: String(Character(scalar)).utf8)
            }
        }
        return String(validating: out, as: UTF8.self)
    }
}
