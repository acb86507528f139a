/// Every payload the gateway publishes is one JSON object that starts with the same four fields,
/// so a consumer can detect gaps and duplicates without knowing the topic:
///
///     {"run":"…","seq":1234,"ts":1732170000.125,"clock_synced":true, …the reading's own fields…}
///
/// `seq` is assigned by the spool when the reading becomes durable; a gap in `seq` always means
/// data loss. `ts` is the gateway's wall clock when the reading was taken; `clock_synced` says
/// whether that clock had been synchronised (a Raspberry Pi has no RTC). The reading's own fields
/// are stored in the spool as a JSON object (`body`) and spliced in here, so rendering costs one copy.
///
/// One kind of body is published as it is: a document whose schema is someone else's (Home Assistant's discovery
/// configuration, whose removal is an empty payload). Such a body starts with `verbatimMarker`, a NUL byte that
/// no JSON text can start with; the marker is dropped and the rest sent without the envelope. It still goes
/// through the spool and takes its `seq` there (in order with the readings around it); only the payload omits it.
public enum PayloadEnvelope {
    /// The first byte of a body to publish without the envelope (never the start of a JSON text, RFC 8259 §2).
    public static let verbatimMarker: UInt8 = 0x00

    /// A body that `render` publishes as `payload`, byte for byte (an empty one too).
    public static func verbatim(_ payload: [UInt8]) -> [UInt8] { [verbatimMarker] + payload }

    /// Renders the envelope around `body`, which must be a JSON object (`{…}`); an empty object adds nothing.
    /// A body made by `verbatim` is returned without its marker and without the envelope.
    public static func render(run: String, seq: UInt64, ts: Double, clockSynced: Bool, body: [UInt8]) -> [UInt8] {
        if body.first == verbatimMarker { return Array(body.dropFirst()) }
        var out = [UInt8]()
        out.reserveCapacity(body.count + 80)
        out.append(contentsOf: #"{"run":""#.utf8)
        out.append(contentsOf: run.utf8)  // runs are hex the gateway makes itself: nothing to escape
        out.append(contentsOf: #"","seq":"#.utf8)
        out.append(contentsOf: String(seq).utf8)
        out.append(contentsOf: #","ts":"#.utf8)
        out.append(contentsOf: formatTimestamp(ts).utf8)
        out.append(contentsOf: #","clock_synced":"#.utf8)
        out.append(contentsOf: (clockSynced ? "true" : "false").utf8)
        // Splice the body's fields after ours: skip its opening brace and any white space.
        var i = body.startIndex
        while i < body.endIndex, body[i] == UInt8(ascii: " ") || body[i] == UInt8(ascii: "\n") { i += 1 }
        if i < body.endIndex, body[i] == UInt8(ascii: "{") { i += 1 }
        var j = i
        while j < body.endIndex, body[j] == UInt8(ascii: " ") || body[j] == UInt8(ascii: "\n") { j += 1 }
        if j < body.endIndex, body[j] != UInt8(ascii: "}") {
            out.append(UInt8(ascii: ","))
            out.append(contentsOf: body[j...])
        } else {
            out.append(UInt8(ascii: "}"))
        }
        return out
    }

    /// Seconds since 1970 with millisecond precision: "1732170000.125".
    public static func formatTimestamp(_ ts: Double) -> String {
        let ms = Int64((ts * 1000).rounded())
        let whole = ms / 1000
        let frac = abs(ms % 1000)
        let f = String(frac)
        return "\(whole).\(String(repeating: "0", count: 3 - f.count))\(f)"
    }
}
