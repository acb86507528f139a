import Foundation

/// The fleet model as terminal text for `blegateway watch`: the same model, ordering and gap counting as the
/// dashboard, cut to the terminal. Gateways come first, worst first; beacons (strongest first) and peripherals that
/// are not connected share what is left; anything cut is said with `… N more`. Pure: model in, lines out.
public enum FleetText {
    public static func render(_ m: FleetModel, rows: Int, columns: Int = 160, now: Double) -> [String] {
        let rows = max(rows, 6)
        var out: [String] = []
        let c = m.counters
        out.append(
            "BLEGateway fleet under \(m.prefix)/ — \(m.gateways.count) gateways, \(c.messages) messages"
                + (c.invalidPayloads + c.unknownTopics + c.badGatewayIDs > 0
                    ? ", bad input: \(c.invalidPayloads) payloads, \(c.unknownTopics) topics, \(c.badGatewayIDs) ids"
                    : ""))
        out.append(
            pad("GATEWAY", 14) + pad("STATUS", 9) + pad("ADAPTER", 12) + pad("SCAN", 9) + pad("SPOOL", 8)
                + pad("MSG/S", 8) + pad("DROPPED", 9) + pad("LAST SEQ", 10) + pad("GAPS", 6) + "PROBLEMS")
        let overview = FleetViews.overview(m, broker: .init(url: ""), now: now)
        // Keep at least three rows for the beacons when there are any, so a large fleet does not hide them all.
        let beaconReserve = overview.beacons.isEmpty ? 0 : 4
        let gatewayRows = fit(overview.gateways.count, into: rows - out.count - beaconReserve)
        for g in overview.gateways.prefix(gatewayRows) {
            let seq = m.gateways[g.id]?.seq
            out.append(
                pad(g.id, 14) + pad(g.status, 9) + pad(g.adapter ?? "?", 12) + pad(g.scanning ?? "-", 9)
                    + pad(g.spoolDepth.map(String.init) ?? "-", 8) + pad(g.messagesPerS.map { fmt($0, 1) } ?? "-", 8)
                    + pad(g.dropped.map(String.init) ?? "-", 9) + pad(seq?.lastSeq.map(String.init) ?? "-", 10)
                    + pad(String(g.gaps), 6) + g.problems.map(\.text).joined(separator: "; "))
        }
        if gatewayRows < overview.gateways.count {
            out.append("… \(overview.gateways.count - gatewayRows) more gateways")
        }

        var peripheralLines: [String] = []
        for g in m.gateways.values.sorted(by: { $0.id < $1.id }) {
            // Standby is as wanted: another gateway of the fleet holds the link.
            for (addr, p) in g.peripherals.sorted(by: { $0.key < $1.key })
            where p.state != "connected" && p.state != "standby" {
                peripheralLines.append(
                    "  " + pad(g.id, 14) + pad(addr, 14) + pad(p.name ?? "", 16) + pad(p.state, 14)
                        + (p.reason ?? ""))
            }
        }
        if !overview.beacons.isEmpty, rows - out.count >= 3 {
            out.append("")
            out.append(
                pad("BEACONS (\(overview.beaconCount))", 62) + pad("GATEWAYS", 10) + pad("BEST RSSI", 11)
                    + "NEAREST")
            let room = rows - out.count - (peripheralLines.isEmpty ? 0 : min(peripheralLines.count + 2, 4))
            let shown = fit(overview.beaconCount, into: room)
            for b in overview.beacons.prefix(shown) {
                out.append(
                    "  " + pad(b.id, 60) + pad(String(b.gateways), 10)
                        + pad(b.bestRSSI.map { fmt($0, 1) } ?? "n/a", 11) + (b.nearest ?? "-"))
            }
            if shown < overview.beaconCount { out.append("  … \(overview.beaconCount - shown) more beacons") }
        }
        if !peripheralLines.isEmpty, rows - out.count >= 3 {
            out.append("")
            out.append("PERIPHERALS NOT CONNECTED (\(peripheralLines.count))")
            let shown = fit(peripheralLines.count, into: rows - out.count)
            out += peripheralLines.prefix(shown)
            if shown < peripheralLines.count { out.append("  … \(peripheralLines.count - shown) more") }
        }
        return out.map { $0.count > columns ? String($0.prefix(columns - 1)) + "…" : $0 }
    }

    /// How many of `count` items fit in `room` lines, keeping one line for `… N more` when they do not all fit.
    static func fit(_ count: Int, into room: Int) -> Int {
        if count <= room { return count }
        return max(0, room - 1)
    }

    static func pad(_ s: String, _ n: Int) -> String {
        guard n > 0 else { return s }
        return s.count >= n ? String(s.prefix(n - 1)) + " " : s + String(repeating: " ", count: n - s.count)
    }

    static func fmt(_ v: Double, _ digits: Int) -> String { String(format: "%.\(digits)f", v) }
}
