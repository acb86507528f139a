import BLEDomain
import BLEHCI
import BLETransport
import Foundation
import Testing

@testable import BLEConfiguration
@testable import BLEGateway

/// `regions`, `peripherals`, `connections` and `ranging` in remote documents: what they become, where a bad value is
/// reported (JSON path and reason), and the hash over them. The rules are the file reader's, run over the JSON.
@Suite struct RemoteConfigSectionsTests {
    static func read(_ text: String) -> RemoteConfigDocument.Verdict { RemoteConfigDocument.read(Array(text.utf8)) }

    static let full = """
        {"version": 4,
         "regions": [
           {"id": "lobby", "uuid": "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0", "major": 1, "minor": 7,
            "enter_rssi": -70, "exit_rssi": -80, "exit_timeout_s": 20, "exit_dwell_s": 8},
           {"id": "dock", "namespace": "00112233445566778899", "instance": "aabbccddeeff"},
           {"id": "desk", "address": "C0:FF:EE:00:00:01"},
           {"id": "tags", "name_prefix": "Tag-"}],
         "peripherals": [
           {"address": "C0:FF:EE:00:00:02", "name": "thermo", "address_type": "random",
            "subscribe": [{"service": "181A", "characteristic": "2A6E", "indicate": false}],
            "read": [{"characteristic": "2A19", "interval_s": 60}],
            "writable": [{"service": "181A", "characteristic": "2A6F"}]},
           {"name_prefix": "Sensor-"},
           {"service": "180D", "subscribe": [{"characteristic": "2A37"}]}],
         "connections": {"max": 2, "connect_timeout_s": 3, "rssi_interval_s": 0, "max_backoff_s": 30,
                         "att_timeout_s": 10},
         "ranging": {"path_loss_exponent": 2.7, "rssi_at_1m": -62, "immediate_below_m": 0.4, "near_below_m": 2.5,
                     "proximity_hysteresis": 0.15, "unknown_after_s": 4, "forget_after_s": 30,
                     "filter_sigma_db": 5, "filter_quiet_acceleration": 0.00003, "filter_maneuver_acceleration": 3,
                     "filter_maneuver_threshold": 0.6, "filter_innovation_smoothing": 0.25, "max_speed_mps": 2}}
        """

    @Test func aDocumentSetsRegionsPeripheralsConnectionsAndRanging() throws {
        let v = Self.read(Self.full)
        #expect(v.errors == [])
        #expect(v.warnings == [])
        var c = GatewayConfiguration()
        try #require(v.overlay).apply(to: &c)
        #expect(c.regions.map(\.id) == ["lobby", "dock", "desk", "tags"])
        let lobby = c.regions[0]
        #expect(
            lobby.matcher == .iBeacon(uuid: BluetoothUUID("E2C56DB5-DFFB-48D2-B060-D0F5A71096E0")!, major: 1, minor: 7))
        #expect(lobby.enterRSSI == -70 && lobby.exitRSSI == -80)
        #expect(lobby.exitTimeout == .seconds(20) && lobby.exitDwell == .seconds(8))
        #expect(
            c.regions[1].matcher
                == .eddystone(
                    namespaceHigh: 0x0011_2233_4455_6677, namespaceLow: 0x8899,
                    instance: 0xAABB_CCDD_EEFF))
        #expect(c.regions[2].matcher == .address(BDAddress("C0:FF:EE:00:00:01")!))
        #expect(c.regions[3].matcher == .namePrefix("Tag-"))

        #expect(c.peripherals.count == 3)
        let thermo = c.peripherals[0]
        #expect(thermo.match == .address(BDAddress("C0:FF:EE:00:00:02")!))
        #expect(thermo.name == "thermo" && thermo.addressType == .random)
        #expect(
            thermo.subscribe == [
                .init(
                    characteristic: .init(
                        service: BluetoothUUID("181A"),
                        characteristic: BluetoothUUID("2A6E")!),
                    indicate: false)
            ])
        #expect(
            thermo.read == [.init(characteristic: .init(characteristic: BluetoothUUID("2A19")!), intervalSeconds: 60)])
        #expect(thermo.allowsWrite(service: BluetoothUUID("181A"), characteristic: BluetoothUUID("2A6F")!))
        #expect(!thermo.allowsWrite(service: nil, characteristic: BluetoothUUID("2A6E")!))
        #expect(c.peripherals[1].match == .namePrefix("Sensor-"))
        #expect(c.peripherals[2].match == .service(BluetoothUUID("180D")!))

        #expect(c.connections.max == 2 && c.connections.connectTimeoutSeconds == 3)
        #expect(c.connections.rssiIntervalSeconds == 0 && c.connections.maxBackoffSeconds == 30)
        #expect(c.connections.attTimeoutSeconds == 10)

        let r = c.rangingConfiguration
        #expect(r.pathLossExponent == 2.7 && r.defaultRSSIAt1m == -62)
        #expect(r.immediateBelow == 0.4 && r.nearBelow == 2.5 && r.proximityHysteresis == 0.15)
        #expect(r.unknownAfter == .seconds(4) && r.forgetAfter == .seconds(30))
        #expect(r.filter.measurementSigmaDB == 5 && r.filter.quietAcceleration == 0.00003)
        #expect(r.filter.maneuverAcceleration == 3 && r.filter.maneuverThreshold == 0.6)
        #expect(r.filter.innovationSmoothing == 0.25 && r.filter.maximumSpeed == 2)
    }

    @Test func aDocumentWithoutTheSectionsLeavesTheLocalOnesAndPartialTablesKeepTheOtherKeys() throws {
        var local = GatewayConfiguration()
        local.regions = [Region(id: "local", matcher: .namePrefix("L"))]
        local.connections.max = 7
        local.ranging.pathLossExponent = 3
        var c = local
        try #require(Self.read(#"{"connections": {"att_timeout_s": 5}, "ranging": {"rssi_at_1m": -65}}"#).overlay)
            .apply(to: &c)
        #expect(c.regions == local.regions)
        #expect(c.connections.max == 7 && c.connections.attTimeoutSeconds == 5)
        #expect(c.ranging.pathLossExponent == 3 && c.ranging.rssiAt1m == -65)
        // An empty list is a list: no regions.
        try #require(Self.read(#"{"regions": []}"#).overlay).apply(to: &c)
        #expect(c.regions.isEmpty)
    }

    /// Each bad section: the document is refused with the JSON path and a reason that says what is wrong.
    static let malformed: [(String, String, String, String)] = [
        ("region without identity", #"{"regions": [{"id": "lobby"}]}"#, "$.regions[0]", "needs one identity"),
        ("region without id", #"{"regions": [{"name_prefix": "A"}]}"#, "$.regions[0].id", "needs an id"),
        (
            "region id a number", #"{"regions": [{"id": 5, "name_prefix": "A"}]}"#, "$.regions[0].id",
            "expected a string, found a number"
        ),
        (
            "region id with a slash", #"{"regions": [{"id": "a/b", "name_prefix": "A"}]}"#, "$.regions[0].id",
            "one topic level"
        ),
        (
            "region two identities", #"{"regions": [{"id": "x", "name_prefix": "A", "address": "C0:FF:EE:00:00:01"}]}"#,
            "$.regions[0].address", "exactly one identity"
        ),
        ("region bad uuid", #"{"regions": [{"id": "x", "uuid": "E2C5"}]}"#, "$.regions[0].uuid", "128-bit UUID"),
        (
            "region major without uuid", #"{"regions": [{"id": "x", "name_prefix": "A", "major": 1}]}"#,
            "$.regions[0].major", "give the uuid"
        ),
        (
            "region major out of range",
            #"{"regions": [{"id": "x", "uuid": "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0", "major": 70000}]}"#,
            "$.regions[0].major", "out of range"
        ),
        (
            "region rssi as string", #"{"regions": [{"id": "x", "name_prefix": "A", "enter_rssi": "-70"}]}"#,
            "$.regions[0].enter_rssi", "expected a number, found a string"
        ),
        (
            "region exit above enter",
            #"{"regions": [{"id": "x", "name_prefix": "A", "enter_rssi": -80, "exit_rssi": -70}]}"#,
            "$.regions[0].exit_rssi", "must not be above"
        ),
        (
            "region timeout zero", #"{"regions": [{"id": "x", "name_prefix": "A", "exit_timeout_s": 0}]}"#,
            "$.regions[0].exit_timeout_s", "out of range"
        ),
        (
            "duplicate region ids", #"{"regions": [{"id": "x", "name_prefix": "A"}, {"id": "x", "name_prefix": "B"}]}"#,
            "$.regions[1].id", "duplicate region id"
        ),
        ("regions not a list", #"{"regions": {"id": "x"}}"#, "$.regions", "expected a list, found an object"),
        ("region not an object", #"{"regions": ["lobby"]}"#, "$.regions[0]", "expected an object, found a string"),
        (
            "peripheral without match", #"{"peripherals": [{"name": "x"}]}"#, "$.peripherals[0]",
            "needs one of address, name_prefix or service"
        ),
        (
            "peripheral bad address", #"{"peripherals": [{"address": "C0:FF"}]}"#, "$.peripherals[0].address",
            "expected an address"
        ),
        (
            "peripheral empty prefix", #"{"peripherals": [{"name_prefix": ""}]}"#, "$.peripherals[0].name_prefix",
            "match every device"
        ),
        (
            "peripheral address type for a service",
            #"{"peripherals": [{"service": "180D", "address_type": "random"}]}"#,
            "$.peripherals[0].address_type", "address match only"
        ),
        (
            "peripheral subscribe without characteristic",
            #"{"peripherals": [{"service": "180D", "subscribe": [{"service": "180D"}]}]}"#,
            "$.peripherals[0].subscribe[0]", "characteristic UUID is required"
        ),
        (
            "peripheral indicate as string",
            #"{"peripherals": [{"service": "180D", "subscribe": [{"characteristic": "2A37", "indicate": "yes"}]}]}"#,
            "$.peripherals[0].subscribe[0].indicate", "expected true or false, found a string"
        ),
        (
            "peripheral read interval negative",
            #"{"peripherals": [{"service": "180D", "read": [{"characteristic": "2A37", "interval_s": -1}]}]}"#,
            "$.peripherals[0].read[0].interval_s", "out of range"
        ),
        (
            "duplicate peripherals", #"{"peripherals": [{"service": "180D"}, {"service": "180d"}]}"#,
            "$.peripherals[1]",
            "one entry per device"
        ),
        ("connections max zero", #"{"connections": {"max": 0}}"#, "$.connections.max", "out of range"),
        (
            "connections max fractional", #"{"connections": {"max": 2.5}}"#, "$.connections.max",
            "expected a whole number"
        ),
        (
            "att timeout over 30", #"{"connections": {"att_timeout_s": 31}}"#, "$.connections.att_timeout_s",
            "out of range"
        ),
        ("connections not an object", #"{"connections": 4}"#, "$.connections", "expected an object, found a number"),
        (
            "path loss exponent as string", #"{"ranging": {"path_loss_exponent": "2"}}"#,
            "$.ranging.path_loss_exponent",
            "expected a number, found a string"
        ),
        ("rssi at 1 m positive", #"{"ranging": {"rssi_at_1m": 4}}"#, "$.ranging.rssi_at_1m", "out of range"),
        (
            "near below immediate", #"{"ranging": {"immediate_below_m": 2, "near_below_m": 1}}"#,
            "$.ranging.near_below_m",
            "must be above immediate_below_m"
        ),
        (
            "forget before unknown", #"{"ranging": {"unknown_after_s": 60, "forget_after_s": 30}}"#,
            "$.ranging.forget_after_s", "must be above unknown_after_s"
        ),
        ("identity keys", #"{"identity_keys": ["00112233445566778899aabbccddeeff"]}"#, "$.identity_keys", "local only"),
    ]

    @Test(arguments: malformed.indices)
    func aBadSectionIsRejectedWithItsPathAndReason(_ n: Int) {
        let (name, text, path, reason) = Self.malformed[n]
        let v = Self.read(text)
        #expect(v.overlay == nil, "\(name)")
        #expect(v.errors.contains { $0.path == path && $0.reason.contains(reason) }, "\(name): \(v.errors)")
    }

    @Test func everyBadListItemIsReportedNotOnlyTheFirst() {
        let v = Self.read(#"{"regions": [{"id": "a"}, {"id": "b", "name_prefix": "B"}, {"id": "c", "uuid": 5}]}"#)
        #expect(v.overlay == nil)
        #expect(v.errors.map(\.path) == ["$.regions[0]", "$.regions[2].uuid"])
    }

    @Test func unknownKeysInsideTheSectionsAreWarningsWithTheirPaths() {
        let v = Self.read(
            #"""
            {"regions": [{"id": "a", "name_prefix": "A", "colour": "red"}],
             "peripherals": [{"service": "180D", "subscribe": [{"characteristic": "2A37", "rate": 1}]}],
             "connections": {"max": 2, "speed": 1}, "ranging": {"wobble": 1}}
            """#)
        #expect(v.errors == [])
        #expect(v.overlay?.regions?.count == 1)
        #expect(
            v.warnings.map(\.path) == [
                "$.regions[0].colour", "$.peripherals[0].subscribe[0].rate",
                "$.connections.speed", "$.ranging.wobble",
            ])
    }

    @Test func theHashCoversTheNewSectionsWhateverTheOrder() throws {
        func effective(_ text: String) throws -> GatewayConfiguration {
            var c = GatewayConfiguration()
            try #require(Self.read(text).overlay).apply(to: &c)
            return c
        }
        let a = try effective(
            """
            {"regions": [{"id": "a", "name_prefix": "A", "exit_timeout_s": 5}, {"id": "b", "address": "C0:FF:EE:00:00:01"}],
             "peripherals": [{"service": "180D", "subscribe": [{"characteristic": "2A37"}, {"characteristic": "2A38"}]},
                             {"address": "C0:FF:EE:00:00:02"}],
             "connections": {"max": 2, "att_timeout_s": 10}, "ranging": {"near_below_m": 2.5, "rssi_at_1m": -61}}
            """)
        let b = try effective(
            """
            {"ranging": {"rssi_at_1m": -61.0, "near_below_m": 2.5}, "connections": {"att_timeout_s": 10, "max": 2},
             "peripherals": [{"address": "C0:FF:EE:00:00:02"},
                             {"subscribe": [{"characteristic": "2A38"}, {"characteristic": "2A37"}], "service": "180D"}],
             "regions": [{"address": "C0:FF:EE:00:00:01", "id": "b"}, {"exit_timeout_s": 5.0, "name_prefix": "A", "id": "a"}]}
            """)
        #expect(a.effectiveHash == b.effectiveHash)
        #expect(a.effectiveHash != GatewayConfiguration().effectiveHash)
        let canonical = String(decoding: a.canonicalRemoteJSON, as: UTF8.self)
        #expect(
            canonical.contains(
                #""regions":[{"address":"C0:FF:EE:00:00:01","exit_dwell_s":5,"exit_timeout_s":10,"id":"b"}"#),
            "\(canonical)")
        #expect(
            canonical.contains(#""connections":{"att_timeout_s":10,"connect_timeout_s":5,"max":2,"#), "\(canonical)")
        // Each section moves the hash.
        for change in [
            #"{"regions": [{"id": "a", "name_prefix": "A", "exit_timeout_s": 6}]}"#,
            #"{"peripherals": [{"address": "C0:FF:EE:00:00:03"}]}"#,
            #"{"connections": {"max": 3}}"#,
            #"{"ranging": {"filter_quiet_acceleration": 0.00004}}"#,
        ] {
            var c = a
            try #require(Self.read(change).overlay).apply(to: &c)
            #expect(c.effectiveHash != a.effectiveHash, "\(change)")
        }
    }

    @Test func theLocalFileReadsRangingWithTheSameRules() throws {
        var reader = YAMLConfigurationReader()
        let c = try reader.read("ranging:\n  path_loss_exponent: 3.1\n  near_below_m: 4\n")
        #expect(c.ranging.pathLossExponent == 3.1 && c.rangingConfiguration.nearBelow == 4)
        var bad = YAMLConfigurationReader()
        #expect(throws: ConfigurationError.self) { try bad.read("ranging:\n  immediate_below_m: 5\n") }
        do {
            var r = YAMLConfigurationReader()
            _ = try r.read("ranging:\n  forget_after_s: 2\n")
            Issue.record("accepted forget_after_s below unknown_after_s")
        } catch let e as ConfigurationError {
            #expect(e.path == "ranging.forget_after_s" && e.line == 2, "\(e)")
        }
    }

    @Test func aLayerWhoseRangingConflictsWithTheOtherLayerIsRejected() {
        let controller = RemoteConfigController(local: GatewayConfiguration(), directory: nil)
        #expect(
            controller.receive(.fleet, payload: Array(#"{"ranging": {"unknown_after_s": 20}}"#.utf8))?.status
                == .applied)
        let o = controller.receive(.gateway, payload: Array(#"{"ranging": {"forget_after_s": 10}}"#.utf8))
        #expect(o?.status == .rejected)
        #expect(o?.errors.first?.path == "$.ranging.forget_after_s")
        #expect(controller.effective.ranging.forgetAfterSeconds == GatewayConfiguration().ranging.forgetAfterSeconds)
    }

    @Test func aReconfiguredRegionMonitorKeepsUnchangedRegionsAndStartsNewAndChangedOnesUnknown() {
        let id = BeaconIdentity.address(BDAddress(rawValue: 0xC0FF_EE00_0001))
        let a = Region(id: "a", matcher: .address(BDAddress(rawValue: 0xC0FF_EE00_0001)))
        let b = Region(id: "b", matcher: .address(BDAddress(rawValue: 0xC0FF_EE00_0001)), exitTimeout: .seconds(4))
        var monitor = RegionMonitor(regions: [a, b], at: .zero)
        _ = monitor.observe(id, rssi: -60, at: .seconds(1))
        #expect(monitor.state(of: "a") == .inside && monitor.state(of: "b") == .inside)
        var changed = b
        changed.exitTimeout = .seconds(8)
        let c = Region(id: "c", matcher: .namePrefix("C"))
        let next = monitor.reconfigured(to: [a, changed, c], at: .seconds(2))
        #expect(next.state(of: "a") == .inside)
        #expect(next.state(of: "b") == .unknown)
        #expect(next.state(of: "c") == .unknown)
        #expect(next.regions == [a, changed, c])
        // The kept region still times out from its last sighting, not from the reconfiguration.
        var later = next
        let events = later.tick(at: .seconds(11.5))
        #expect(events.contains { $0.region == "a" && $0.kind == .exited }, "\(events)")
    }
}
