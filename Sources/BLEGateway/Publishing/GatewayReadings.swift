import BLEConfiguration
import BLEDomain
import BLEESPHome
import BLEHCI
import BLEPublishing
import BLESpool
import BLETransport

/// Turns what the gateway observes into spool readings: topic, class, QoS, retain and the JSON body
/// (schema/v1). Pure: the caller supplies the time and whether the clock was synchronised.
struct GatewayReadings: Sendable {
    /// The budget of a state's variable part (a GATT tree, a verdict's issues): well under the 256 KiB many brokers
    /// take by default, so a retained state is never the packet a broker refuses.
    static let maxStateBytes = 64 * 1024

    let topics: Topics
    let run: String
    let version: String
    let started: Double
    /// QoS of samples; state readings use at least 1.
    let sampleQoS: UInt8
    /// MQTT 5 expiry of samples, seconds (nil: none).
    let sampleExpiry: Double?

    var stateQoS: UInt8 { max(1, sampleQoS) }

    func status(
        online: Bool, reason: String?, refusal: SpoolPublisher.Refusal? = nil, ts: Double,
        synced: Bool
    ) -> Reading {
        Reading(
            .state, topic: topics.status, body: statusBody(online: online, reason: reason, refusal: refusal),
            qos: stateQoS, retain: true, ts: ts, clockSynchronized: synced, run: run)
    }

    func statusBody(online: Bool, reason: String?, refusal: SpoolPublisher.Refusal? = nil) -> [UInt8] {
        var o = JSONObjectWriter()
        o.string("state", online ? "online" : "offline")
        o.string("gateway", topics.gatewayID)
        o.string("version", version)
        o.number("started", started)
        if let reason { o.string("reason", reason) }
        // While the broker refuses publishes for now (an ACL, a quota): what it says, since when. Delivered where the
        // broker still takes the status, and in any case once it takes publishes again, followed by a status without.
        if let refusal {
            o.object("publish_refused") { r in
                r.int("reason_code", refusal.reason.rawValue)
                r.string("reason", refusal.reason.name ?? "unknown")
                r.number("since", refusal.since, digits: 3)
            }
        }
        return o.finished
    }

    /// The last will: sent by the broker, not the gateway, so it has no place in the durable sequence (`seq` null).
    func willPayload(ts: Double, synced: Bool) -> [UInt8] {
        var o = JSONObjectWriter()
        o.string("run", run)
        o.raw("seq", Array("null".utf8))
        o.number("ts", ts)
        o.bool("clock_synced", synced)
        o.string("state", "offline")
        o.string("gateway", topics.gatewayID)
        o.string("version", version)
        o.number("started", started)
        o.string("reason", "connection lost")
        return o.finished
    }

    func adapter(_ a: AdapterReport, since: Double, ts: Double, synced: Bool) -> Reading {
        var o = JSONObjectWriter()
        o.string("state", a.state.rawValue)
        o.number("since", since)
        o.string("device", a.device)
        o.string("mode", a.mode.rawValue)
        if let address = a.address { o.string("address", address) }
        if let v = a.hciVersion { o.int("hci_version", v) }
        if let m = a.manufacturer { o.int("manufacturer", m) }
        o.string("scanning", a.scanning.rawValue)
        if let r = a.reason { o.string("reason", r) }
        if let slot = a.slot { o.string("slot", slot.rawValue) }
        if let roles = a.roles { o.strings("roles", roles.names) }
        let topic = a.scope == .slot ? topics.adapterSlot((a.slot ?? .primary).rawValue) : topics.adapter
        return Reading(
            .state, topic: topic, body: o.finished, qos: stateQoS, retain: true, ts: ts,
            clockSynchronized: synced, run: run)
    }

    struct Health: Sendable {
        var uptime: Double
        var spool: SpoolStatistics
        var publish: SpoolPublisher.Statistics
        /// Retained states sent unretained: the broker keeps none (MQTTClient.unretainedPublishes).
        var unretained = 0
        /// MQTT 3.1.1 only: the gateway's own online status did not come back after the last connection (StatusEcho).
        var deniedSuspected: Bool? = nil
        /// MQTT 3.1.1 only: the families whose first acknowledged message did not come back (PublishEcho).
        var deniedSuspectedFamilies: [String]? = nil
        var publishRate: Double
        var reconnects: Int
        /// The broker connected to now (`MQTTClient.broker`), and connections accepted by another than the one before.
        var broker: String? = nil
        var failovers = 0
        var reports: Int
        /// Reports per second over the last health interval.
        var reportRate: Double = 0
        var malformedEvents: Int
        var dropped = DroppedReports()
        var reassembly = ReassemblyDrops()
        /// Raw advertisements the token bucket held back, TLM frames the per-interval bound forgot, and messages the
        /// gateway's own subscriptions (commands, config, claims) dropped because their reader fell a buffer behind.
        var rawRateLimited = 0
        var telemetryDiscarded = 0
        var droppedDeliveries = 0
        var trackedBeacons: Int
        var evictedBeacons: Int
        var residentBytes: Int
        /// The recovery ladder's counters, when the gateway owns the controller.
        var adapter: AdapterLifecycle.Statistics? = nil
        /// With two adapters: each one's counters and the handovers between them.
        var adapterSlots: AdapterSlotsStatistics? = nil
        /// Peripheral links, when any are configured.
        var peripherals: PeripheralService.Statistics? = nil
        /// Private-address resolution, when identity keys are configured: (resolutions, AES blocks, cache resets).
        var identity: (resolutions: Int, hashComputations: Int, cacheResets: Int)? = nil
        /// Configured regions and how many are `inside` now.
        var regions: (count: Int, inside: Int)? = nil
        /// Home Assistant discovery, while on.
        var homeAssistant: HomeAssistantCounts? = nil
        /// Sensor advertisements: decoded, published, and every one held back by why.
        var sensors: (gate: SensorPublishGate.Statistics, tracked: Int)? = nil
        /// ESPHome's native API, while it serves.
        var esphome: ESPHomeStatistics? = nil
    }

    /// Home Assistant discovery's counters (schema/v1/health.json, `homeassistant`).
    struct HomeAssistantCounts: Sendable, Equatable {
        /// Devices announced, and devices left out because `max_devices` was reached.
        var devices: Int
        var refusedDevices: Int
        /// Documents the broker has not acknowledged yet, and of them those it refused (its ACL).
        var pendingDocuments: Int
        var refusedDocuments: Int
    }

    /// One recovery ladder's counters (schema/v1/health.json, `adapter`).
    static func ladder(_ a: AdapterLifecycle.Statistics, into j: inout JSONObjectWriter) {
        j.int("climbs", a.climbs)
        j.int("exhausted", a.exhausted)
        j.int("silences", a.silences)
        j.object("recoveries") { r in
            for step in AdapterLifecycle.Step.allCases { r.int(step.rawValue, a.recoveries[step] ?? 0) }
        }
        j.object("attempts") { r in
            for step in AdapterLifecycle.Step.allCases { r.int(step.rawValue, a.attempts[step] ?? 0) }
        }
        if let t = a.lastTimeToRecover { j.number("last_time_to_recover_s", t.seconds, digits: 3) }
        j.number("total_time_to_recover_s", a.totalTimeToRecover.seconds, digits: 3)
    }

    func health(_ h: Health, ts: Double, synced: Bool) -> Reading {
        var o = JSONObjectWriter()
        o.number("uptime_s", h.uptime, digits: 1)
        o.object("spool") { s in
            let samples = h.spool.drops[.sample] ?? DropCounters()
            s.int("depth", h.spool.depth)
            s.int("bytes", h.spool.bytesOnDisk)
            s.int("dropped_samples", samples.droppedOldest + samples.droppedInMemory)
            s.int("downsampled_samples", samples.downsampled)
            // Of dropped_samples, those dropped before they took a seq (in memory, commits failing): no seq is missing
            // for them, so a consumer matches its gaps against the others.
            s.int("dropped_before_seq", samples.droppedInMemory)
            s.int("dropped_states", (h.spool.drops[.state] ?? DropCounters()).total)
            if h.spool.reserveReleases > 0 { s.int("reserve_releases", h.spool.reserveReleases) }
            if let e = h.spool.lastError { s.string("error", "\(e)") }
            // Corrupt files set aside at start or while running (kept for a post-mortem, within the spool's bound
            // of 3): the latest count.
            let aside = h.spool.lastQuarantine ?? h.spool.openReport
            if aside.setAsideFiles > 0 {
                s.object("set_aside") { a in
                    a.int("files", aside.setAsideFiles)
                    a.int("bytes", aside.setAsideBytes)
                }
            }
            if let q = h.spool.lastQuarantine {
                s.object("quarantines") { o in
                    o.int("count", h.spool.quarantines)
                    o.int("last_salvaged", q.salvagedReadings)
                    o.int("last_lost", q.lostReadings)
                }
            }
            s.object("dead_letters") { d in
                d.int("count", h.spool.deadLetters)
                d.int("bytes", h.spool.deadLetterBytes)
                d.int("evicted", h.spool.deadLettersEvicted)
            }
        }
        o.object("publish") { p in
            p.int("acknowledged", h.publish.acknowledged)
            p.number("rate_per_s", h.publishRate, digits: 1)
            p.bool("connected", h.publish.connected)
            p.int("reconnects", h.reconnects)
            if let b = h.broker { p.string("broker", b) }
            p.int("failovers", h.failovers)
            p.int("rejected", h.publish.rejected)
            p.int("unretained", h.unretained)
            if let d = h.deniedSuspected { p.bool("denied_suspected", d) }
            if let f = h.deniedSuspectedFamilies { p.strings("denied_suspected_families", f) }
            p.int("expired", h.publish.expired)
            p.int("dropped_deliveries", h.droppedDeliveries)
            // Only when a notice (a dead letter, a refusal beginning or ending) went unread: the counts hold anyway.
            if h.publish.noticesDropped > 0 { p.int("notices_dropped", h.publish.noticesDropped) }
            // Refusals for now (Not authorized, Quota exceeded …): the readings are kept and sent again.
            p.object("refused") { r in
                r.int("count", h.publish.refused)
                if let refusal = h.publish.refusal {
                    r.int("reason_code", refusal.reason.rawValue)
                    r.string("reason", refusal.reason.name ?? "unknown")
                    r.number("since", refusal.since, digits: 3)
                }
                // The topic families held back now; everything else is being published.
                if !h.publish.refusedFamilies.isEmpty { r.strings("families", h.publish.refusedFamilies) }
            }
        }
        o.object("scan") { s in
            s.int("reports", h.reports)
            s.number("reports_per_s", h.reportRate, digits: 1)
            s.int("dropped_reports", h.dropped.total)
            s.object("dropped") { d in
                d.int("transport", h.dropped.transport)
                d.int("controller", h.dropped.controller)
                d.int("scanner", h.dropped.scanner)
            }
            s.object("reassembly") { r in
                r.int("evicted", h.reassembly.evicted)
                r.int("expired", h.reassembly.expired)
                r.int("oversized", h.reassembly.oversized)
            }
            s.int("raw_rate_limited", h.rawRateLimited)
            s.int("telemetry_discarded", h.telemetryDiscarded)
            s.int("malformed_events", h.malformedEvents)
            s.int("tracked_beacons", h.trackedBeacons)
            s.int("evicted_beacons", h.evictedBeacons)
        }
        o.object("memory") { m in m.int("rss_bytes", h.residentBytes) }
        if let a = h.adapter { o.object("adapter") { Self.ladder(a, into: &$0) } }
        if let s = h.adapterSlots {
            o.object("adapters") { j in
                j.int("handovers", s.handovers)
                for (slot, a) in s.slots { j.object(slot) { Self.ladder(a, into: &$0) } }
            }
        }
        if let i = h.identity {
            o.object("identity") { j in
                j.int("resolutions", i.resolutions)
                j.int("hash_computations", i.hashComputations)
                j.int("cache_resets", i.cacheResets)
            }
        }
        if let r = h.regions {
            o.object("regions") { j in
                j.int("count", r.count)
                j.int("inside", r.inside)
            }
        }
        if let ha = h.homeAssistant {
            o.object("homeassistant") { j in
                j.int("devices", ha.devices)
                j.int("refused_devices", ha.refusedDevices)
                j.int("pending_documents", ha.pendingDocuments)
                j.int("refused_documents", ha.refusedDocuments)
            }
        }
        if let s = h.sensors {
            o.object("sensors") { j in
                j.int("tracked", s.tracked)
                j.int("decoded", s.gate.decoded)
                j.int("published", s.gate.published)
                j.int("repeats", s.gate.repeats)
                j.int("rate_limited", s.gate.rateLimited)
                j.int("replays", s.gate.replays)
                j.int("undecryptable", s.gate.undecryptable)
                j.int("out_of_range", s.gate.outOfRange)
                j.int("unknown_objects", s.gate.unknownObjects)
                j.int("truncated", s.gate.truncated)
                j.int("forgotten", s.gate.forgotten)
            }
        }
        if let p = h.peripherals {
            o.object("peripherals") { j in
                j.int("connected", p.connected)
                j.int("attempts", p.connections.attempts)
                j.int("connections", p.connections.connections)
                j.int("failed_attempts", p.connections.failedAttempts)
                j.int("cancelled_attempts", p.connections.cancelledAttempts)
                j.int("disconnections", p.connections.disconnections)
                j.int("values", p.values)
                j.int("dropped_values", p.droppedValues)
                j.int("att_timeouts", p.attTimeouts)
                j.int("writes", p.writes)
                j.int("refused_writes", p.refusedWrites)
                j.int("evicted_matches", p.evictedMatches)
            }
        }
        if let e = h.esphome {
            o.object("esphome_api") { j in
                j.int("clients", e.clients)
                j.int("connections", e.connectionsAccepted)
                j.int("wrong_key", e.wrongKey)
                j.int("protocol_errors", e.protocolErrors)
                j.int("unknown_messages", e.unknownMessages)
                j.int("advertisements_sent", e.advertisementsSent)
                j.int("advertisements_dropped", e.advertisementsDropped)
                j.int("subscriptions_refused", e.subscriptionsRefused)
                j.int("parsed_subscriptions_refused", e.parsedSubscriptionsRefused)
                j.int("stalled_clients", e.stalledClients)
            }
        }
        return Reading(
            .sample, topic: topics.health, body: o.finished, qos: sampleQoS, retain: false, ts: ts,
            clockSynchronized: synced, expiry: sampleExpiry, run: run)
    }

    /// The beacon's kind as the topics name it, from its identity: frames without a stable identity (Eddystone URL,
    /// TLM, EID, anything else) are ranged by address and are "other" here.
    static func kind(of identity: BeaconIdentity) -> String {
        switch identity {
        case .iBeacon: "ibeacon"
        case .eddystone: "eddystone-uid"
        case .altBeacon: "altbeacon"
        case .address: "other"
        }
    }

    /// The distance filter's name and parameters, as a beacon summary carries them (docs/design/ranging.md): the
    /// configuration keys that shape the distance, by their names in `ranging:`.
    static func filterDescription(_ r: GatewayConfiguration.Ranging) -> [UInt8] {
        var o = JSONObjectWriter()
        o.string("name", "adaptive-ekf-distance")
        for key in GatewayConfiguration.Ranging.keys
        where key.name.hasPrefix("filter_") || key.name == "path_loss_exponent" || key.name == "max_speed_mps" {
            o.number(key.name, key.get(r), digits: 6)
        }
        return o.finished
    }

    /// One beacon's ranging for the interval that ended (schema/v1/beacon.json).
    func beacon(
        _ u: RangingUpdate, interval: Double, filter: [UInt8], telemetry: EddystoneTLM.Plain? = nil,
        ts: Double, synced: Bool
    ) -> Reading {
        let id = u.identity.id
        var o = JSONObjectWriter()
        o.string("id", id)
        o.string("kind", Self.kind(of: u.identity))
        o.string("address", u.address.description)
        o.number("rssi", u.filteredRSSI, digits: 1)
        o.int("samples", u.samples)
        o.number("interval_s", interval)
        o.number("measured_power", u.rssiAt1m, digits: 1)
        o.string("calibration", u.calibration.rawValue)
        o.number("distance_m", u.distance, digits: 2)
        o.number("accuracy_m", u.accuracy, digits: 2)
        o.string("proximity", u.proximity.rawValue)
        // What the distance was made from: the raw readings' mean and spread, and the filter that smoothed them.
        o.number("rssi_raw_mean", u.rawRSSIMean, digits: 1)
        o.number("rssi_variance", u.rawRSSIVariance, digits: 2)
        o.raw("filter", filter)
        if let t = telemetry {
            // Eddystone-TLM (eddystone-tlm/tlm-plain.md): null where the beacon says "not supported".
            o.object("tlm") { j in
                j.number("battery_v", t.batteryVolts)
                j.number("temperature_c", t.temperatureCelsius, digits: 2)
                j.int("adv_count", t.advertisingCount)
                j.number("uptime_s", Double(t.uptimeDeciseconds) / 10, digits: 1)
            }
        }
        return Reading(
            .sample, topic: topics.beacon(id), body: o.finished, qos: sampleQoS, retain: false,
            ts: ts, clockSynchronized: synced, expiry: sampleExpiry, run: run)
    }

    /// A region state's `event` (schema/v1/region.json): an enter, an exit, or a determination that is neither (a
    /// first one, or one after an adapter recovery, that changed nothing known).
    enum RegionChange: String, Sendable {
        case determined
        case enter
        case exit
    }

    /// A region's retained state (schema/v1/region.json); `beacons` names the beacon that caused an enter.
    func region(
        _ id: String, state: RegionState, since: Double, event: RegionChange, beacon: BeaconIdentity?,
        ts: Double, synced: Bool
    ) -> Reading {
        var o = JSONObjectWriter()
        o.string("region", id)
        o.string("state", state.rawValue)
        o.number("since", since)
        o.string("event", event.rawValue)
        if let beacon { o.raw("beacons", Array("[\"\(beacon.id)\"]".utf8)) }
        return Reading(
            .state, topic: topics.region(id), body: o.finished, qos: stateQoS, retain: true, ts: ts,
            clockSynchronized: synced, run: run)
    }

    /// One sighting on the raw stream, in the `scan --json` form (docs/SCAN_JSON.md).
    func raw(_ s: Sighting, synced: Bool) -> Reading {
        var body: [UInt8] = []
        s.appendJSON(to: &body, includeTimestamp: false)
        return Reading(
            .sample, topic: topics.raw(s.address.topicComponent), body: body, qos: 0, retain: false,
            ts: s.timestamp, clockSynchronized: synced, expiry: sampleExpiry, run: run)
    }
}
