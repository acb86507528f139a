/// Builds one JSON object field by field, for the gateway's payload bodies. Strings are escaped by
/// `JSONWriter` (device-provided text is untrusted); non-finite numbers become null.
package struct JSONObjectWriter {
    package private(set) var bytes: [UInt8] = [UInt8(ascii: "{")]
    private var empty = true

    package init() {}

    private mutating func key(_ k: String) {
        if !empty { bytes.append(UInt8(ascii: ",")) }
        empty = false
        JSONWriter.appendString(k, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
    }

    package mutating func string(_ k: String, _ v: String?) {
        key(k)
        if let v { JSONWriter.appendString(v, to: &bytes) } else { bytes.append(contentsOf: "null".utf8) }
    }

    package mutating func int<I: BinaryInteger>(_ k: String, _ v: I?) {
        key(k)
        if let v { JSONWriter.appendDecimal(Int64(v), to: &bytes) } else { bytes.append(contentsOf: "null".utf8) }
    }

    /// A number with at most `digits` decimals (trailing zeros dropped).
    package mutating func number(_ k: String, _ v: Double?, digits: Int = 3) {
        key(k)
        guard let v, v.isFinite else { return bytes.append(contentsOf: "null".utf8) }
        var scale: Double = 1
        for _ in 0..<digits { scale *= 10 }
        JSONWriter.appendFixed(Int64((v * scale).rounded()), scale: digits, to: &bytes)
    }

    package mutating func bool(_ k: String, _ v: Bool) {
        key(k)
        bytes.append(contentsOf: (v ? "true" : "false").utf8)
    }

    package mutating func object(_ k: String, _ build: (inout JSONObjectWriter) -> Void) {
        key(k)
        var inner = JSONObjectWriter()
        build(&inner)
        bytes.append(contentsOf: inner.finished)
    }

    /// An array of strings.
    package mutating func strings(_ k: String, _ v: [String]) {
        key(k)
        bytes.append(UInt8(ascii: "["))
        for (i, e) in v.enumerated() {
            if i > 0 { bytes.append(UInt8(ascii: ",")) }
            JSONWriter.appendString(e, to: &bytes)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    /// A value already rendered as JSON.
    package mutating func raw(_ k: String, _ json: [UInt8]) {
        key(k)
        bytes.append(contentsOf: json)
    }

    package var finished: [UInt8] { bytes + [UInt8(ascii: "}")] }
}

/// `[a,b,…]` from rendered elements.
package enum JSONArrayWriter {
    package static func write<T>(_ items: [T], to out: inout [UInt8], _ render: (T) -> [UInt8]) {
        out.append(UInt8(ascii: "["))
        for (n, item) in items.enumerated() {
            if n > 0 { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: render(item))
        }
        out.append(UInt8(ascii: "]"))
    }

    /// `write` within `budget` bytes of rendered elements: stops before the first that would pass it; returns how
    /// many were left out.
    package static func write<T>(_ items: [T], to out: inout [UInt8], budget: Int, _ render: (T) -> [UInt8]) -> Int {
        out.append(UInt8(ascii: "["))
        var used = 0
        for (n, item) in items.enumerated() {
            let rendered = render(item)
            if used + rendered.count + 1 > budget {
                out.append(UInt8(ascii: "]"))
                return items.count - n
            }
            if n > 0 { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: rendered)
            used += rendered.count + 1
        }
        out.append(UInt8(ascii: "]"))
        return 0
    }
}
