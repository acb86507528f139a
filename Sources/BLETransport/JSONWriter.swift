/// The project's one JSON writer: values appended to a byte buffer by hand (no Foundation, no reflection), for the
/// JSON lines, the payload bodies, the canonical configuration and the simulator's ground truth.
/// `JSONObjectWriter` builds objects from these.
package enum JSONWriter {
    @inlinable package static func appendDecimal(_ v: Int64, to out: inout [UInt8]) {
        if v < 0 { out.append(UInt8(ascii: "-")) }
        var m = v.magnitude
        var digits:
            (
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8
            ) =
                (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var n = 0
        withUnsafeMutableBytes(of: &digits) { buf in
            repeat {
                buf[n] = UInt8(ascii: "0") + UInt8(m % 10)
                m /= 10
                n += 1
            } while m > 0
            while n > 0 {
                n -= 1
                out.append(buf[n])
            }
        }
    }

    /// `units / 10^scale` with exactly the needed fractional digits (trailing zeros dropped).
    package static func appendFixed(_ units: Int64, scale: Int, to out: inout [UInt8]) {
        var p: UInt64 = 1
        for _ in 0..<min(max(scale, 0), 18) { p *= 10 }
        if units < 0 { out.append(UInt8(ascii: "-")) }
        let m = units.magnitude
        appendDecimal(Int64(m / p), to: &out)
        var frac = Int64(m % p)
        guard frac != 0 else { return }
        var digits = scale
        while frac % 10 == 0 {
            frac /= 10
            digits -= 1
        }
        out.append(UInt8(ascii: "."))
        var tmp: [UInt8] = []
        appendDecimal(frac, to: &tmp)
        for _ in tmp.count..<digits { out.append(UInt8(ascii: "0")) }
        out.append(contentsOf: tmp)
    }

    /// A JSON string from untrusted octets: invalid UTF-8 becomes U+FFFD; quote, backslash, control
    /// characters and DEL are escaped, so a device name can never break a line or the object.
    package static func appendString(untrusted bytes: some Collection<UInt8>, to out: inout [UInt8]) {
        // Most names are printable ASCII with nothing to escape: copied as they are.
        if bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }) {
            out.append(UInt8(ascii: "\""))
            out.append(contentsOf: bytes)
            out.append(UInt8(ascii: "\""))
            return
        }
        appendString(String(decoding: bytes, as: UTF8.self), to: &out)
    }

    package static func appendString(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "\""): JSONWriter.raw(#"\""#, &out)
            case UInt8(ascii: "\\"): JSONWriter.raw(#"\\"#, &out)
            case 0x0A: JSONWriter.raw(#"\n"#, &out)
            case 0x0D: JSONWriter.raw(#"\r"#, &out)
            case 0x09: JSONWriter.raw(#"\t"#, &out)
            case 0x00..<0x20, 0x7F:
                JSONWriter.raw(#"\u00"#, &out)
                HexDigits.append(UInt64(b), digits: 2, upper: false, to: &out)
            default: out.append(b)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// Appends a literal's bytes with one copy (a String's UTF-8 view goes element by element).
    @inlinable package static func raw(_ s: StaticString, _ out: inout [UInt8]) {
        out.append(contentsOf: UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    /// `,"k":`
    @inlinable package static func key(_ k: StaticString, _ out: inout [UInt8]) {
        raw(",\"", &out)
        raw(k, &out)
        raw("\":", &out)
    }

    @inlinable package static func int(_ v: Int64?, _ out: inout [UInt8]) {
        if let v { appendDecimal(v, to: &out) } else { raw("null", &out) }
    }

    @inlinable package static func bool(_ v: Bool, _ out: inout [UInt8]) { v ? raw("true", &out) : raw("false", &out) }

    @inlinable package static func hexString(_ bytes: some Sequence<UInt8>, _ out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        HexDigits.append(bytes: bytes, upper: false, to: &out)
        out.append(UInt8(ascii: "\""))
    }
}
