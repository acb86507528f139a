import Testing

@testable import BLEFleet

@Suite struct FleetSettingsFileTests {
    @Test func theFleetSectionWinsOverTheGatewaysMQTTSection() throws {
        let f = try FleetSettingsFile(
            yaml: """
                mqtt:
                  broker: mqtt://gateway-broker:1883
                  prefix: site-a
                fleet:
                  broker: mqtt://fleet-broker:1883
                  listen: 0.0.0.0:9000
                  history: /tmp/h.sqlite
                  beacon_timeout_s: 60
                """)
        #expect(f.broker == "mqtt://fleet-broker:1883")
        #expect(f.prefix == "site-a")  // from mqtt:, the fleet section did not set it
        #expect(f.listen == "0.0.0.0:9000")
        #expect(f.history == "/tmp/h.sqlite")
        #expect(f.beaconTimeoutS == 60)
    }

    /// A cluster's nodes, from the fleet section or the gateway's own `mqtt.brokers`, become the comma-separated list
    /// the fleet service's client fails over along (as a tool's `--broker`).
    @Test func aClustersNodesAreReadFromEitherSectionAndBothFormsAtOnceAreRefused() throws {
        let fleet = try FleetSettingsFile(yaml: "fleet:\n  brokers: [mqtt://n1:1883, mqtt://n2:1883]\n")
        #expect(fleet.broker == "mqtt://n1:1883,mqtt://n2:1883")
        let gateway = try FleetSettingsFile(yaml: "mqtt:\n  brokers: [mqtt://a:1, mqtt://b:2]\n")
        #expect(gateway.broker == "mqtt://a:1,mqtt://b:2")
        #expect(throws: FleetSettingsFile.Problem.self) {
            try FleetSettingsFile(yaml: "fleet:\n  broker: mqtt://a\n  brokers: [mqtt://b]\n")
        }
        #expect(throws: FleetSettingsFile.Problem.self) { try FleetSettingsFile(yaml: "fleet:\n  brokers: []\n") }
    }

    /// Two instances for one site: each its name and the lease's length; a cluster that speaks 3.1.1 only (NATS)
    /// through `mqtt.protocol`, as in the gateway's file. Each bad value is refused, named by path.
    @Test func anInstancesNameItsLeaseTheProtocolAndTheRetentionAreReadAndBadValuesNamed() throws {
        let f = try FleetSettingsFile(yaml: "mqtt:\n  protocol: 3\nfleet:\n  instance: fleet-a\n  lease_s: 6\n")
        #expect(f.instance == "fleet-a" && f.leaseS == 6 && f.protocolVersion == 3)
        #expect(try FleetSettingsFile(yaml: "mqtt:\n  protocol: 4\n").protocolVersion == 3)
        #expect(try FleetSettingsFile(yaml: "fleet:\n  history_retention_h: 168\n").historyRetentionS == 168 * 3600)
        #expect(try FleetSettingsFile(yaml: "fleet:\n  listen: :1\n").instance == nil)
        let bad: [(String, String)] = [
            ("fleet:\n  instance: \"fleet a\"\n", "fleet.instance"),
            ("fleet:\n  instance: \"\"\n", "fleet.instance"),
            ("fleet:\n  lease_s: 1\n", "fleet.lease_s"),
            ("fleet:\n  lease_s: soon\n", "fleet.lease_s"),
            ("mqtt:\n  protocol: 6\n", "mqtt.protocol"),
            ("fleet:\n  history_retention_h: 0.5\n", "fleet.history_retention_h"),
            ("fleet:\n  history_retention_h: 10000\n", "fleet.history_retention_h"),
        ]
        for (text, path) in bad {
            #expect("\(text)") { try FleetSettingsFile(yaml: text) } throws: { e in
                (e as? FleetSettingsFile.Problem)?.path == path
            }
        }
        let settings = FleetLease.Settings(leaseS: 6)
        #expect(settings.renewS == 2 && settings.fenceS == 4.5)
    }

    /// The shipped ACL lets no one in anonymously: the fleet service logs in as its own user, from files, never from
    /// the gateway's `mqtt:` credentials (a gateway's user may not write the fleet's topics).
    @Test func theFleetsBrokerUserComesFromItsOwnFiles() throws {
        let f = try FleetSettingsFile(
            yaml: """
                mqtt:
                  username_file: /etc/blegateway/credentials/username
                fleet:
                  username_file: /etc/blegateway/fleet/username
                  password_file: /etc/blegateway/fleet/password
                """)
        #expect(f.usernameFile == "/etc/blegateway/fleet/username")
        #expect(f.passwordFile == "/etc/blegateway/fleet/password")
        let gatewaysOnly = try FleetSettingsFile(yaml: "mqtt:\n  username_file: /etc/blegateway/credentials/username\n")
        #expect(gatewaysOnly.usernameFile == nil)
        do {
            _ = try FleetSettingsFile(yaml: "fleet:\n  password_file: /p\n")
            Issue.record("accepted a password without a user")
        } catch {
            #expect("\(error)" == "fleet.password_file: needs fleet.username_file")
        }
    }

    @Test func unknownKeysAndWrongTypesAreNamedByPath() {
        #expect(throws: FleetSettingsFile.Problem.self) { try FleetSettingsFile(yaml: "fleet:\n  lisen: :80\n") }
        do {
            _ = try FleetSettingsFile(yaml: "fleet:\n  beacon_timeout_s: soon\n")
            Issue.record("accepted a non-number")
        } catch {
            #expect("\(error)" == "fleet.beacon_timeout_s: expected a positive number of seconds")
        }
    }

    @Test func listenAddressesParse() throws {
        #expect(try FleetSettingsFile.parseListen("127.0.0.1:8080") == ("127.0.0.1", 8080))
        #expect(try FleetSettingsFile.parseListen(":8080") == ("0.0.0.0", 8080))
        #expect(try FleetSettingsFile.parseListen("[::1]:0") == ("::1", 0))
        #expect(throws: FleetSettingsFile.Problem.self) { try FleetSettingsFile.parseListen("localhost") }
    }

    @Test func aListOfSitesIsReadAndCheckedAndExcludesPrefix() throws {
        let f = try FleetSettingsFile(yaml: "fleet:\n  sites: [acme/site-a, acme/site-b]\n")
        #expect(f.sites == ["acme/site-a", "acme/site-b"])
        #expect(throws: FleetSettingsFile.Problem.self) {
            try FleetSettingsFile(yaml: "fleet:\n  prefix: x\n  sites: [a, b]\n")
        }
        #expect(throws: FleetSettingsFile.Problem.self) { try FleetSettingsFile(yaml: "fleet:\n  sites: [a, a/b]\n") }
        #expect(throws: FleetSettingsFile.Problem.self) { try FleetSettingsFile(yaml: "fleet:\n  sites: a\n") }
    }
}
