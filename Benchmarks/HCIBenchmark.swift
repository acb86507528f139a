import BLEHCI
import BLETransport

/// HCI hot path: parse an LE Advertising Report event and walk its reports (what every received
/// advertisement costs before AD decoding), and join two-fragment extended reports.
/// Prints events per second; the lead folds the numbers into docs/BENCHMARKS.md.
func runHCIBenchmark(args: [String]) {
    let iterations = args.first.flatMap(Int.init) ?? 1_000_000
    // One ADV_NONCONN_IND carrying an iBeacon-sized payload (30 octets), RSSI -60.
    var payload: [UInt8] = [0x3E, 0x00, 0x02, 0x01, 0x03, 0x01, 0x55, 0x44, 0x33, 0x22, 0x11, 0xC0, 0x1E]
    payload += [0x02, 0x01, 0x06, 0x1A, 0xFF, 0x4C, 0x00, 0x02, 0x15] + [UInt8](repeating: 0xAB, count: 21) + [0xC4]
    payload[1] = UInt8(payload.count - 2)

    let clock = ContinuousClock()
    var rssiSum = 0
    let start = clock.now
    for _ in 0..<iterations {
        guard case .leAdvertisingReport(let params)? = HCIEvent.parse(payload[...]) else { fatalError("vector") }
        _ = LEAdvertisingReport.parseLegacy(params) { rssiSum &+= Int($0.rssi ?? 0) }
    }
    let elapsed = (clock.now - start).seconds
    print("hci.parse_legacy_report: \(Int(Double(iterations) / elapsed)) events/s (checksum \(rssiSum))")

    // Extended: a 2-fragment chain per advertisement.
    func ext(_ status: UInt16, _ data: [UInt8]) -> LEAdvertisingReport {
        var w = ByteWriter()
        w.u8(1)
        w.le16(status << 5)
        w.u8(1)
        BDAddress(rawValue: 0xC011_2233_4455).write(to: &w)
        w.append([0x01, 0x02, 0x01, 0x7F, 0xBA, 0, 0, 0, 0, 0, 0, 0, 0, 0])
        w.u8(UInt8(data.count))
        w.append(data)
        var out: LEAdvertisingReport?
        _ = LEAdvertisingReport.parseExtended(w.bytes[...]) { out = $0 }
        return out!
    }
    let first = ext(1, [UInt8](repeating: 0x11, count: 200))
    let last = ext(0, [UInt8](repeating: 0x22, count: 50))
    var r = ExtendedAdvertisingReassembler()
    var joined = 0
    let n = iterations / 10
    let start2 = clock.now
    for i in 0..<n {
        let now = Duration.microseconds(i)
        _ = r.accept(first, now: now)
        if let a = r.accept(last, now: now) { joined &+= a.report.data.count }
    }
    let elapsed2 = (clock.now - start2).seconds
    print("hci.reassemble_extended_2_fragments: \(Int(Double(n) / elapsed2)) advertisements/s (checksum \(joined))")
}
