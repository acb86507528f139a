import BLETransport

/// A JSON value as the remote configuration reader sees it: numbers keep whether they were written as integers,
/// objects keep their key order (for warnings in document order) and refuse duplicate keys.
package enum RemoteJSON: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double, integer: Bool)
    case string(String)
    case array([RemoteJSON])
    case object([(String, RemoteJSON)])

    package static func == (a: RemoteJSON, b: RemoteJSON) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.bool(let x), .bool(let y)): return x == y
        case (.number(let x, _), .number(let y, _)): return x == y
        case (.string(let x), .string(let y)): return x == y
        case (.array(let x), .array(let y)): return x == y
        case (.object(let x), .object(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: return false
        }
    }

    var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .number: return "a number"
        case .string: return "a string"
        case .array: return "a list"
        case .object: return "an object"
        }
    }
}

/// Why a payload is not a JSON document the gateway will look at; `offset` is the byte where reading stopped.
package struct RemoteJSONError: Error, Equatable, Sendable, CustomStringConvertible {
    var offset: Int?
    var reason: String
    package var description: String { offset.map { "byte \($0): \(reason)" } ?? reason }
}

/// A bounded JSON reader (RFC 8259) for documents that arrive from the broker, where anyone allowed to publish
/// can send anything. The limits are checked before any work that grows with them: the size before reading, the
/// nesting depth before each recursion — so a 1 MB payload or 10,000 nested brackets are refused, not a stack
/// overflow. Strings must be valid UTF-8 (`String(validating:)`), as RFC 8259 §8.1 requires between systems.
package struct RemoteJSONParser {
    static let maxBytes = 64 * 1024
    static let maxDepth = 16

    private let bytes: [UInt8]
    private var i = 0

    private init(_ bytes: [UInt8]) { self.bytes = bytes }

    package static func parse(_ payload: [UInt8]) throws(RemoteJSONError) -> RemoteJSON {
        guard payload.count <= maxBytes else {
            throw RemoteJSONError(reason: "document is \(payload.count) bytes; at most \(maxBytes) are accepted")
        }
        guard String(validating: payload, as: UTF8.self) != nil else {
            throw RemoteJSONError(reason: "not UTF-8 text")
        }
        var p = RemoteJSONParser(payload)
        p.skipSpace()
        guard p.i < p.bytes.count else { throw RemoteJSONError(reason: "empty document") }
        let v = try p.value(depth: 1)
        p.skipSpace()
        guard p.i == p.bytes.count else { throw p.fail("unexpected text after the document") }
        return v
    }

    private func fail(_ reason: String) -> RemoteJSONError { RemoteJSONError(offset: i, reason: reason) }

    private mutating func skipSpace() {
        while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x09 || bytes[i] == 0x0A || bytes[i] == 0x0D { i += 1 }
    }

    private mutating func value(depth: Int) throws(RemoteJSONError) -> RemoteJSON {
        guard i < bytes.count else { throw fail("unexpected end of document") }
        switch bytes[i] {
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            guard depth <= Self.maxDepth else { throw fail("nested deeper than \(Self.maxDepth) levels") }
            return bytes[i] == UInt8(ascii: "{") ? try object(depth: depth) : try array(depth: depth)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"):
            try literal("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw fail("unexpected character '\(Unicode.Scalar(bytes[i]))'")
        }
    }

    private mutating func literal(_ word: String) throws(RemoteJSONError) {
        for b in word.utf8 {
            guard i < bytes.count, bytes[i] == b else { throw fail("expected \(word)") }
            i += 1
        }
    }

    private mutating func object(depth: Int) throws(RemoteJSONError) -> RemoteJSON {
        i += 1
        var pairs: [(String, RemoteJSON)] = []
        var keys: Set<String> = []
        skipSpace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "}") {
            i += 1
            return .object(pairs)
        }
        while true {
            skipSpace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw fail("expected a key in quotes") }
            let keyAt = i
            let k = try string()
            guard keys.insert(k).inserted else {
                throw RemoteJSONError(offset: keyAt, reason: "duplicate key \"\(k)\"")
            }
            skipSpace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw fail("expected ':' after the key") }
            i += 1
            skipSpace()
            pairs.append((k, try value(depth: depth + 1)))
            skipSpace()
            guard i < bytes.count else { throw fail("unterminated object") }
            if bytes[i] == UInt8(ascii: ",") {
                i += 1
                continue
            }
            if bytes[i] == UInt8(ascii: "}") {
                i += 1
                return .object(pairs)
            }
            throw fail("expected ',' or '}'")
        }
    }

    private mutating func array(depth: Int) throws(RemoteJSONError) -> RemoteJSON {
        i += 1
        var items: [RemoteJSON] = []
        skipSpace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "]") {
            i += 1
            return .array(items)
        }
        while true {
            skipSpace()
            items.append(try value(depth: depth + 1))
            skipSpace()
            guard i < bytes.count else { throw fail("unterminated list") }
            if bytes[i] == UInt8(ascii: ",") {
                i += 1
                continue
            }
            if bytes[i] == UInt8(ascii: "]") {
                i += 1
                return .array(items)
            }
            throw fail("expected ',' or ']'")
        }
    }

    private mutating func string() throws(RemoteJSONError) -> String {
        i += 1
        var out: [UInt8] = []
        while true {
            guard i < bytes.count else { throw fail("unterminated string") }
            let b = bytes[i]
            if b == UInt8(ascii: "\"") {
                i += 1
                break
            }
            guard b >= 0x20 else { throw fail("control character in a string") }
            if b != UInt8(ascii: "\\") {
                out.append(b)
                i += 1
                continue
            }
            i += 1
            guard i < bytes.count else { throw fail("unterminated escape") }
            let e = bytes[i]
            i += 1
            if let c = JSONShortEscape.octet(e) {
                out.append(c)
                continue
            }
            switch e {
            case UInt8(ascii: "u"):
                switch JSONUnicodeEscape.read(bytes[...], digits: i) {
                case .success(let (scalar, end)):
                    i = end
                    out.append(contentsOf: String(Character(scalar)).utf8)
                case .failure(let failure):
                    i = failure.at
                    switch failure {
                    case .short: throw fail("short \\u escape")
                    case .badHexDigit: throw fail("bad hex digit in \\u escape")
                    case .loneSurrogate: throw fail("lone surrogate in \\u escape")
                    }
                }
            default: throw fail("invalid escape")
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// RFC 8259 §6 grammar: -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
    private mutating func number() throws(RemoteJSONError) -> RemoteJSON {
        let start = i
        var integer = true
        if bytes[i] == UInt8(ascii: "-") { i += 1 }
        func digits(_ p: inout RemoteJSONParser) -> Int {
            let s = p.i
            while p.i < p.bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(p.bytes[p.i]) { p.i += 1 }
            return p.i - s
        }
        guard i < bytes.count else { throw fail("bad number") }
        if bytes[i] == UInt8(ascii: "0") { i += 1 } else if digits(&self) == 0 { throw fail("bad number") }
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            integer = false
            i += 1
            guard digits(&self) > 0 else { throw fail("bad number") }
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            integer = false
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard digits(&self) > 0 else { throw fail("bad number") }
        }
        guard i - start <= 40, let v = Double(String(decoding: bytes[start..<i], as: UTF8.self)), v.isFinite else {
            throw RemoteJSONError(offset: start, reason: "number out of range")
        }
        return .number(v, integer: integer)
    }
}
