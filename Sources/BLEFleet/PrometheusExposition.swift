import Foundation

/// The fleet model in the Prometheus text exposition format (version 0.0.4,
/// https://prometheus.io/docs/instrumenting/exposition_formats/): one `# HELP`/`# TYPE` block per family, label
/// values escaped (backslash, double quote and line feed, as the format requires).
public enum PrometheusExposition {
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    struct Family {
        let name: String
        let type: String
        let help: String
        var samples: [(labels: [(String, String)], value: Double)] = []
    }

    public static func render(_ m: FleetModel, broker: FleetViews.BrokerState, presence: FleetPresence? = nil) -> String
    {
        var f: [String: Family] = [:]
        var order: [String] = []
        func add(_ name: String, _ type: String, _ help: String, _ labels: [(String, String)], _ value: Double?) {
            guard let value else { return }
            if f[name] == nil {
                f[name] = Family(name: name, type: type, help: help)
                order.append(name)
            }
            f[name]!.samples.append((labels, value))
        }
        for g in m.gateways.values.sorted(by: { $0.id < $1.id }) {
            // With several sites, each gateway's series also say which (ids are unique across them).
            let gl = m.sites.count > 1 ? [("gateway", g.id), ("site", g.site)] : [("gateway", g.id)]
            add(
                "blegateway_gateway_up", "gauge", "1 while the gateway's status is online.", gl,
                g.status == "online" ? 1 : 0)
            if let v = g.version {
                add(
                    "blegateway_gateway_info", "gauge", "Gateway version and run (value always 1).",
                    gl + [("version", v), ("run", g.run ?? "")], 1)
            }
            if let a = g.adapter {
                add(
                    "blegateway_adapter_powered_on", "gauge", "1 while the scanning adapter is poweredOn.",
                    gl + [("state", a.state)], a.state == "poweredOn" ? 1 : 0)
            }
            if let h = g.health {
                add(
                    "blegateway_spool_depth", "gauge", "Readings in the spool not yet acknowledged.", gl,
                    Double(h.spoolDepth))
                add("blegateway_spool_bytes", "gauge", "Size of the spool file.", gl, h.spoolBytes.map(Double.init))
                add(
                    "blegateway_published_total", "counter", "Readings acknowledged by the broker since start.", gl,
                    Double(h.acknowledged))
                add(
                    "blegateway_dropped_samples_total", "counter", "Samples dropped by a full spool since start.",
                    gl, Double(h.droppedSamples))
                add(
                    "blegateway_publish_rate", "gauge", "Messages per second the gateway publishes.", gl,
                    h.messagesPerS)
                add(
                    "blegateway_scan_reports_total", "counter", "Advertising reports received since start.", gl,
                    Double(h.reports))
                add(
                    "blegateway_beacons_tracked", "gauge", "Beacons the gateway's ranging engine tracks.", gl,
                    h.trackedBeacons.map(Double.init))
                add(
                    "blegateway_resident_memory_bytes", "gauge", "The gateway process's RSS.", gl,
                    Double(h.rssBytes))
                add("blegateway_uptime_seconds", "gauge", "Seconds since the gateway started.", gl, h.uptimeS)
                for (stage, n) in h.drops.sorted(by: { $0.key < $1.key }) {
                    add(
                        "blegateway_dropped_total", "counter",
                        "Drops the gateway counted since start, by where they happened (its health topic).",
                        gl + [("stage", stage)], Double(n))
                }
            }
            add(
                "blegateway_peripherals_connected", "gauge", "Configured peripherals with a link up.", gl,
                Double(g.peripherals.values.filter { $0.state == "connected" }.count))
            add(
                "blegateway_regions_inside", "gauge", "Regions whose state is inside.", gl,
                Double(g.regions.values.filter { $0.state == "inside" }.count))
            add(
                "blegateway_seq_missing_total", "counter", "Readings lost: seqs missing inside one run's live stream.",
                gl, Double(g.seq.missing))
            add(
                "blegateway_invalid_payloads_total", "counter", "Payloads from this gateway not matching schema/v1.",
                gl, Double(g.invalid))
            if let c = g.config {
                add(
                    "blegateway_config_applied", "gauge", "1 when the last remote configuration was applied.",
                    gl + [("hash", c.hash)], c.status == "applied" ? 1 : 0)
            }
        }
        for (i, site) in m.sites.enumerated() {
            add(
                "blegateway_fleet_gateways", i == 0 ? "gauge" : "", i == 0 ? "Gateways known under the prefix." : "",
                [("prefix", site)], Double(m.gateways.values.filter { $0.site == site }.count))
        }
        add(
            "blegateway_fleet_messages_total", "counter", "Messages the fleet service received.", [],
            Double(m.counters.messages))
        add(
            "blegateway_fleet_bad_input_total", "counter", "Messages the fleet service could not fold, by kind.",
            [("kind", "invalid_payload")], Double(m.counters.invalidPayloads))
        add(
            "blegateway_fleet_bad_input_total", "counter", "", [("kind", "unknown_topic")],
            Double(m.counters.unknownTopics))
        add(
            "blegateway_fleet_bad_input_total", "counter", "", [("kind", "bad_gateway_id")],
            Double(m.counters.badGatewayIDs))
        add(
            "blegateway_fleet_bad_input_total", "counter", "", [("kind", "site_conflict")],
            Double(m.counters.siteConflicts))
        add(
            "blegateway_fleet_broker_connected", "gauge", "1 while the fleet service is connected to its broker.",
            [], broker.connected ? 1 : 0)
        add(
            "blegateway_fleet_broker_reconnects_total", "counter", "Times the fleet service reconnected.", [],
            Double(broker.reconnects))
        add(
            "blegateway_fleet_active", "gauge",
            "1 while this instance holds the site's lease and publishes presence and rooms (0: standby).",
            [("instance", broker.instance)], broker.role == "active" ? 1 : 0)
        let lease = broker.lease
        for (i, (kind, value)) in [
            ("activation", lease.activations), ("fence", lease.fences), ("stale_claim", lease.staleClaims),
            ("unreadable_claim", lease.unreadable),
        ].enumerated() {
            add(
                "blegateway_fleet_lease_events_total", i == 0 ? "counter" : "",
                i == 0
                    ? "Events on the site's lease, by kind: this instance took over or fenced itself; claims ignored as "
                        + "stale (a lower epoch) or unreadable." : "",
                [("instance", broker.instance), ("kind", kind)], Double(value))
        }
        add(
            "blegateway_fleet_dropped_messages_total", "counter",
            "Messages the fleet service lost because it fell behind the broker.", [], Double(broker.droppedMessages))
        if let presence {
            for (prefix, s) in presence.sites.sorted(by: { $0.key < $1.key }) {
                let l = [("site", prefix)]
                let c = s.engine.counters
                add(
                    "blegateway_presence_tags", "gauge", "Tags the presence engine follows.", l,
                    Double(s.engine.tagCount))
                add(
                    "blegateway_presence_readings_total", "counter", "Gateway readings folded into presence.", l,
                    Double(c.readings))
                add(
                    "blegateway_presence_unplaced_readings_total", "counter",
                    "Readings from gateways the site description does not place (ignored).", l,
                    Double(c.unplacedReadings))
                add(
                    "blegateway_presence_ignored_readings_total", "counter",
                    "Readings of a tag from a gateway its site settings ignore (tags[].ignore_gateways).", l,
                    Double(c.ignoredReadings))
                add(
                    "blegateway_presence_contradictions_total", "counter",
                    "Fits whose distances contradicted each other (the last good position kept).", l,
                    Double(c.contradictions))
                add(
                    "blegateway_presence_refused_tags_total", "counter", "Readings of tags beyond presence.max_tags.",
                    l,
                    Double(c.refusedTags))
            }
            add(
                "blegateway_presence_not_published_total", "counter",
                "Presence reports the broker connection could not take (sent again within 30 s).", [],
                Double(presence.notPublished))
        }

        var out = ""
        for name in order {
            let fam = f[name]!
            out += "# HELP \(name) \(escapeHelp(fam.help))\n# TYPE \(name) \(fam.type)\n"
            for s in fam.samples {
                out += name
                if !s.labels.isEmpty {
                    out += "{" + s.labels.map { "\($0.0)=\"\(escapeLabel($0.1))\"" }.joined(separator: ",") + "}"
                }
                out += " " + format(s.value) + "\n"
            }
        }
        return out
    }

    static func escapeLabel(_ s: String) -> String {
        var out = ""
        for c in s {
            switch c {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(c)
            }
        }
        return out
    }

    static func escapeHelp(_ s: String) -> String {
        s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\n", with: "\\n")
    }

    static func format(_ v: Double) -> String {
        if v.isNaN { return "NaN" }
        if v.isInfinite { return v > 0 ? "+Inf" : "-Inf" }
        if v == v.rounded(), abs(v) < 1e15 { return String(Int64(v)) }
        return "\(v)"
    }
}
