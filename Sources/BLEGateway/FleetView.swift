import Foundation

/// What a subscriber to `<prefix>/#` knows about the fleet, folded from the messages it received:
/// the model behind `blegateway watch` (the demo's live view). Pure: messages in, text out.
public struct FleetView: Sendable {
    public struct Gateway: Sendable, Equatable {
        public var status = "?"
        public var version = ""
        public var adapter = "?"
        public var address = ""
        public var spoolDepth: Int?
        public var publishRate: Double?
        public var dropped: Int?
        public var lastSeq: Int?
        public var messages = 0
        public var gaps = 0
    }

    public struct Beacon: Sendable, Equatable {
        public var kind = ""
        public var rssi: Double?
        public var samples = 0
        public var distance: Double?
        public var proximity = ""
        public var ts = 0.0
    }

    public struct Peripheral: Sendable, Equatable {
        public var state = "?"
        public var reason = ""
        public var rssi: Int?
    }

    public let prefix: String
    public private(set) var gateways: [String: Gateway] = [:]
    /// Keyed by gateway id, then beacon id.
    public private(set) var beacons: [String: [String: Beacon]] = [:]
    public private(set) var regions: [String: [String: String]] = [:]
    public private(set) var peripherals: [String: [String: Peripheral]] = [:]
    public private(set) var messageCount = 0
    public private(set) var undecodable = 0

    public init(prefix: String) { self.prefix = prefix }

    /// Folds one message in. Topics outside the prefix, and payloads that are not JSON objects, are counted and ignored.
    public mutating func receive(topic: String, payload: [UInt8]) {
        guard topic.hasPrefix(prefix + "/") else { return }
        let levels = topic.dropFirst(prefix.count + 1).split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard levels.count >= 2, levels[0] != "fleet" else { return }
        messageCount += 1
        if payload.isEmpty { return }  // a cleared retained message
        guard let json = (try? JSONSerialization.jsonObject(with: Data(payload))) as? [String: Any] else {
            undecodable += 1
            return
        }
        let gw = levels[0]
        var g = gateways[gw] ?? Gateway()
        g.messages += 1
        if let seq = json["seq"] as? Int {
            // Retained messages and replays arrive out of order; only count forward jumps as gaps
            // in this live view (the zero-loss tests check continuity exactly).
            if let last = g.lastSeq, seq > last + 1, levels[1] != "status" { g.gaps += 1 }
            if seq > (g.lastSeq ?? 0) { g.lastSeq = seq }
        }
        switch levels[1] {
        case "status":
            g.status = json["state"] as? String ?? "?"
            g.version = json["version"] as? String ?? ""
        case "adapter":
            g.adapter = json["state"] as? String ?? "?"
            g.address = json["address"] as? String ?? g.address
        case "health":
            let spool = json["spool"] as? [String: Any]
            g.spoolDepth = spool?["depth"] as? Int
            g.dropped = spool?["dropped_samples"] as? Int
            g.publishRate = (json["publish"] as? [String: Any])?["rate_per_s"] as? Double
        case "beacons" where levels.count == 3:
            var b = beacons[gw]?[levels[2]] ?? Beacon()
            b.kind = json["kind"] as? String ?? b.kind
            b.rssi = json["rssi"] as? Double
            b.samples = json["samples"] as? Int ?? 0
            b.distance = json["distance_m"] as? Double
            b.proximity = json["proximity"] as? String ?? ""
            b.ts = json["ts"] as? Double ?? 0
            beacons[gw, default: [:]][levels[2]] = b
        case "regions" where levels.count == 3:
            regions[gw, default: [:]][levels[2]] = json["state"] as? String ?? "?"
        case "peripherals" where levels.count == 4:
            var p = peripherals[gw]?[levels[2]] ?? Peripheral()
            if levels[3] == "state" {
                p.state = json["state"] as? String ?? "?"
                p.reason = json["reason"] as? String ?? ""
            } else if levels[3] == "rssi" {
                p.rssi = json["rssi"] as? Int
            }
            peripherals[gw, default: [:]][levels[2]] = p
        default:
            break
        }
        gateways[gw] = g
    }

    /// The view as lines of text, at most `maxBeacons` beacon rows per gateway (strongest first).
    public func render(maxBeacons: Int = 12) -> [String] {
        var out: [String] = []
        out.append("BLEGateway fleet under \(prefix)/ — \(messageCount) messages")
        out.append("")
        out.append(pad("GATEWAY", 14) + pad("STATUS", 9) + pad("ADAPTER", 12) + pad("ADDRESS", 19) + pad("SPOOL", 8)
            + pad("MSG/S", 8) + pad("DROPPED", 9) + pad("LAST SEQ", 10) + "GAPS")
        for (id, g) in gateways.sorted(by: { $0.key < $1.key }) {
            out.append(pad(id, 14) + pad(g.status, 9) + pad(g.adapter, 12) + pad(g.address, 19)
                + pad(g.spoolDepth.map(String.init) ?? "-", 8) + pad(g.publishRate.map { fmt($0, 1) } ?? "-", 8)
                + pad(g.dropped.map(String.init) ?? "-", 9) + pad(g.lastSeq.map(String.init) ?? "-", 10) + "\(g.gaps)")
        }
        for (gw, list) in beacons.sorted(by: { $0.key < $1.key }) {
            out.append("")
            out.append("\(gw): \(list.count) beacons")
            out.append("  " + pad("BEACON", 58) + pad("RSSI", 8) + pad("N", 5) + pad("DIST m", 8) + "PROXIMITY")
            let rows = list.sorted { ($0.value.rssi ?? -999) > ($1.value.rssi ?? -999) }.prefix(maxBeacons)
            for (id, b) in rows {
                out.append("  " + pad(id, 58) + pad(b.rssi.map { fmt($0, 1) } ?? "n/a", 8) + pad(String(b.samples), 5)
                    + pad(b.distance.map { fmt($0, 1) } ?? "-", 8) + b.proximity)
            }
            if list.count > maxBeacons { out.append("  … \(list.count - maxBeacons) more") }
        }
        for (gw, list) in peripherals.sorted(by: { $0.key < $1.key }) where !list.isEmpty {
            out.append("")
            out.append("\(gw): peripherals")
            for (addr, p) in list.sorted(by: { $0.key < $1.key }) {
                out.append("  " + pad(addr, 14) + pad(p.state, 14) + pad(p.rssi.map { "\($0) dBm" } ?? "", 10) + p.reason)
            }
        }
        for (gw, list) in regions.sorted(by: { $0.key < $1.key }) where !list.isEmpty {
            out.append("")
            out.append("\(gw): regions " + list.sorted(by: { $0.key < $1.key }).map { "\($0.key)=\($0.value)" }.joined(separator: "  "))
        }
        return out
    }

    private func pad(_ s: String, _ n: Int) -> String {
        s.count >= n ? String(s.prefix(n - 1)) + " " : s + String(repeating: " ", count: n - s.count)
    }

    private func fmt(_ v: Double, _ digits: Int) -> String { String(format: "%.\(digits)f", v) }
}
