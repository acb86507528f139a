import Foundation

/// The payloads of schema/v1 as far as the fleet view reads them. Decoding is strict on the fields the schema
/// requires, so a payload that does not match is counted as invalid rather than shown half-read. The properties are
/// the schema's own snake_case keys, decoded as they are spelled.
// swift-format-ignore: AlwaysUseLowerCamelCase
enum FleetPayload {
    /// One reading: the envelope and the topic's own fields, read from one parse of the payload (both decode from
    /// the same decoder, so the JSON is parsed once — it matters at tens of thousands of messages a second).
    struct Reading<Body: Decodable>: Decodable {
        let envelope: Envelope
        let body: Body
        init(from decoder: any Decoder) throws {
            envelope = try Envelope(from: decoder)
            body = try Body(from: decoder)
        }
    }

    /// `envelope.json`: every reading starts this way; `seq` is null only in the last will.
    struct Envelope: Decodable {
        var run: String
        var seq: Int?
        var ts: Double
        var clock_synced: Bool
    }

    /// For topics whose own fields the fleet view does not read.
    struct Nothing: Decodable {}

    struct Status: Decodable {
        var state: String
        var gateway: String
        var version: String
        var started: Double
        var reason: String?
    }

    struct Adapter: Decodable {
        var state: String
        var since: Double
        var device: String
        var mode: String?
        var address: String?
        var scanning: String?
        var reason: String?
        var slot: String?
        var roles: [String]?
    }

    struct Health: Decodable {
        struct Spool: Decodable {
            var depth: Int
            var bytes: Int?
            var dropped_samples: Int
            var downsampled_samples: Int?
        }
        struct Publish: Decodable {
            var acknowledged: Int
            var rate_per_s: Double
            var connected: Bool
            var reconnects: Int?
            var broker: String?
            var failovers: Int?
            var rejected: Int?
            var dropped_deliveries: Int?
            var notices_dropped: Int?
        }
        struct Scan: Decodable {
            struct Dropped: Decodable {
                var transport: Int?
                var controller: Int?
                var scanner: Int?
            }
            struct Reassembly: Decodable {
                var evicted: Int?
                var expired: Int?
                var oversized: Int?
            }
            var reports: Int
            var malformed_events: Int?
            var tracked_beacons: Int?
            var dropped: Dropped?
            var reassembly: Reassembly?
            var raw_rate_limited: Int?
            var telemetry_discarded: Int?
        }
        struct Memory: Decodable { var rss_bytes: Int }
        struct Regions: Decodable {
            var count: Int?
            var inside: Int?
        }
        struct Peripherals: Decodable {
            var connected: Int?
            var dropped_values: Int?
        }
        var uptime_s: Double
        var spool: Spool
        var publish: Publish
        var scan: Scan
        var memory: Memory
        var regions: Regions?
        var peripherals: Peripherals?
    }

    struct Beacon: Decodable {
        var id: String
        var kind: String
        var address: String
        var rssi: Double?
        var samples: Int
        var interval_s: Double
        var distance_m: Double?
        var accuracy_m: Double?
        var proximity: String?
        var name: String?
    }

    struct Region: Decodable {
        var region: String
        var state: String
        var since: Double
        var event: String?
        var beacons: [String]?
    }

    struct PeripheralState: Decodable {
        var address: String
        var state: String
        var since: Double
        var attempts: Int
        var reason: String?
        var reason_code: Int?
        var name: String?
        /// With `standby`: the gateway that owns the peripheral.
        var owner: String?
    }

    struct PeripheralRSSI: Decodable {
        var address: String
        var rssi: Int?
    }

    struct ConfigState: Decodable {
        struct Problem: Decodable {
            var path: String
            var reason: String
        }
        var status: String
        var hash: String
        var version: Int?
        var errors: [Problem]
        var warnings: [Problem]
        var restart_required: [String]?
    }
}

// The streams' payloads, read by FleetJSON with the strictness of their `Decodable` forms: required fields must be
// there, every field present must have its type.
extension FleetPayload.Envelope {
    init(_ j: FleetJSON) throws(FleetJSON.Failure) {
        run = try j.required(j.string("run"), "run")
        seq = try j.int("seq")
        ts = try j.required(j.double("ts"), "ts")
        clock_synced = try j.required(j.bool("clock_synced"), "clock_synced")
    }
}

extension FleetPayload.Beacon {
    init(_ j: FleetJSON) throws(FleetJSON.Failure) {
        id = try j.required(j.string("id"), "id")
        kind = try j.required(j.string("kind"), "kind")
        address = try j.required(j.string("address"), "address")
        rssi = try j.double("rssi")
        samples = try j.required(j.int("samples"), "samples")
        interval_s = try j.required(j.double("interval_s"), "interval_s")
        distance_m = try j.double("distance_m")
        accuracy_m = try j.double("accuracy_m")
        proximity = try j.string("proximity")
        name = try j.string("name")
    }
}

extension FleetPayload.PeripheralRSSI {
    init(_ j: FleetJSON) throws(FleetJSON.Failure) {
        address = try j.required(j.string("address"), "address")
        rssi = try j.int("rssi")
    }
}

extension FleetPayload {
    /// `…/sensors/<address>` (schema/v1/sensor.json), as far as the dashboard reads it.
    struct Sensor {
        var address: String
        var format: String
        var model: String
        var rssi: Double?
        var values: [String: Double]

        init(_ j: FleetJSON) throws(FleetJSON.Failure) {
            address = try j.required(j.string("address"), "address")
            format = try j.required(j.string("format"), "format")
            model = try j.required(j.string("model"), "model")
            rssi = try j.double("rssi")
            values = try j.required(j.object("values"), "values").numbers
        }
    }
}
