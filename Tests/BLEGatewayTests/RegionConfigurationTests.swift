import BLEDomain
import BLEHCI
import BLETransport
import Foundation
import Testing

@testable import BLEConfiguration
@testable import BLEGateway

/// `regions:` and `identity_keys:` in gateway.yaml: what they become, and where a bad value is reported.
@Suite struct RegionConfigurationTests {
    func read(_ yaml: String) throws -> (GatewayConfiguration, [ConfigurationError]) {
        var r = YAMLConfigurationReader()
        let c = try r.read(yaml)
        return (c, r.warnings)
    }

    func error(_ yaml: String) -> ConfigurationError? {
        var r = YAMLConfigurationReader()
        do { _ = try r.read(yaml) } catch let e as ConfigurationError { return e } catch { return nil }
        return nil
    }

    @Test func eachIdentityKindBecomesItsMatcherWithThresholds() throws {
        let (c, warnings) = try read(
            """
            regions:
              - id: lobby
                uuid: E2C56DB5-DFFB-48D2-B060-D0F5A71096E0
                major: 1
                minor: 7
                enter_rssi: -70
                exit_rssi: -80
                exit_timeout_s: 2.5
              - id: dock.2
                namespace: edd1ebeac04e5defa017
                instance: 0123456789ab
              - id: tag_x
                address: "C0:FF:EE:00:00:01"
              - id: carts-any
                name_prefix: Cart
            """)
        #expect(warnings.isEmpty)
        #expect(c.regions.map(\.id) == ["lobby", "dock.2", "tag_x", "carts-any"])
        let uuid = try #require(BluetoothUUID("E2C56DB5-DFFB-48D2-B060-D0F5A71096E0"))
        #expect(c.regions[0].matcher == .iBeacon(uuid: uuid, major: 1, minor: 7))
        #expect(c.regions[0].enterRSSI == -70 && c.regions[0].exitRSSI == -80)
        #expect(c.regions[0].exitTimeout == .milliseconds(2500))
        #expect(
            c.regions[1].matcher
                == .eddystone(
                    namespaceHigh: 0xedd1_ebea_c04e_5def, namespaceLow: 0xa017,
                    instance: 0x0123_4567_89ab))
        #expect(c.regions[2].matcher == .address(try #require(BDAddress("C0:FF:EE:00:00:01"))))
        #expect(c.regions[3].matcher == .namePrefix("Cart"))
        #expect(c.regions[3].exitTimeout == .seconds(10), "the default timeout")
    }

    @Test func theShippedExampleUncommentedIsValid() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../config/gateway.yaml")
        let lines = try String(contentsOf: url, encoding: .utf8)
            .split(separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(lines.firstIndex { $0.hasPrefix("# regions:") })
        let example = lines[start...].map { $0.hasPrefix("# ") ? String($0.dropFirst(2)) : String($0) }
            .joined(separator: "\n")
        let (c, warnings) = try read(example)
        #expect(warnings.isEmpty, "\(warnings)")
        #expect(c.regions.map(\.id) == ["lobby", "desk", "dock", "carts"] && c.identityKeys.count == 2)
    }

    @Test func theShippedPeripheralsExampleUncommentedIsValid() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../config/gateway.yaml")
        let lines = try String(contentsOf: url, encoding: .utf8)
            .split(separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(lines.firstIndex { $0.hasPrefix("# peripherals:") })
        let end = try #require(lines[start...].firstIndex { $0.isEmpty })
        let example = lines[start..<end].map { $0.hasPrefix("# ") ? String($0.dropFirst(2)) : String($0) }
            .joined(separator: "\n")
        let (c, warnings) = try read(example)
        #expect(warnings.isEmpty, "\(warnings)")
        #expect(c.peripherals.count == 3)
        #expect(c.peripherals[0].subscribe.count == 2 && c.peripherals[0].read.first?.intervalSeconds == 300)
        #expect(c.peripherals[0].allowsWrite(service: nil, characteristic: BluetoothUUID(uuid16: 0x2A06)))
        #expect(c.peripherals[1].match == .namePrefix("Thermo"))
        #expect(c.peripherals[2].match == .service(BluetoothUUID(uuid16: 0x180D)))
    }

    @Test func aBadUUIDIsReportedAtItsValue() {
        let e = error("regions:\n  - id: a\n    uuid: not-a-uuid\n")
        #expect(e?.path == "regions[0].uuid" && e?.line == 3 && e?.column == 11, "\(String(describing: e))")
    }

    @Test func aRegionIdLongerThanATopicLevelMayBeIsRefusedAtIt() {
        let long = String(repeating: "r", count: 65)
        let e = error("regions:\n  - id: \(long)\n    name_prefix: X\n")
        #expect(e?.path == "regions[0].id" && e?.message.contains("at most 64") == true, "\(String(describing: e))")
        #expect(error("regions:\n  - id: \(long.dropLast())\n    name_prefix: X\n") == nil)
    }

    @Test func twoIdentitiesAreRefusedAtTheSecond() {
        let e = error("regions:\n  - id: a\n    uuid: E2C56DB5-DFFB-48D2-B060-D0F5A71096E0\n    name_prefix: X\n")
        #expect(e?.path == "regions[0].name_prefix" && e?.line == 4 && e?.column == 18, "\(String(describing: e))")
        #expect(e?.message.contains("exactly one identity") == true)
    }

    @Test func aRegionWithoutIdOrIdentityIsRefused() {
        let noID = error("regions:\n  - name_prefix: X\n")
        #expect(noID?.path == "regions[0].id" && noID?.line == 2 && noID?.column == 5, "\(String(describing: noID))")
        let noIdentity = error("regions:\n  - id: a\n    enter_rssi: -60\n")
        #expect(noIdentity?.path == "regions[0]" && noIdentity?.line == 2, "\(String(describing: noIdentity))")
    }

    @Test func aDuplicateIdIsReportedAtTheSecond() {
        let e = error("regions:\n  - id: a\n    name_prefix: X\n  - id: a\n    name_prefix: Y\n")
        #expect(e?.path == "regions[1].id" && e?.line == 4 && e?.column == 9, "\(String(describing: e))")
    }

    @Test func anIdThatIsNotOneTopicLevelIsRefused() {
        let e = error("regions:\n  - id: a/b\n    name_prefix: X\n")
        #expect(e?.path == "regions[0].id" && e?.line == 2 && e?.column == 9, "\(String(describing: e))")
    }

    @Test func narrowingWithoutItsParentAndInvertedThresholdsAreRefused() {
        let major = error("regions:\n  - id: a\n    address: C0:FF:EE:00:00:01\n    major: 1\n")
        #expect(major?.path == "regions[0].major")
        #expect(error("regions:\n  - id: a\n    namespace: edd1ebeac04e5defa017\n    instance: 12\n")?.line == 4)
        let e = error("regions:\n  - id: a\n    name_prefix: X\n    enter_rssi: -80\n    exit_rssi: -70\n")
        #expect(e?.path == "regions[0].exit_rssi" && e?.line == 5, "\(String(describing: e))")
    }

    @Test func identityKeysResolveToTheGivenOrADerivedIdentity() throws {
        let (c, warnings) = try read(
            """
            identity_keys:
              - ec0234a357c8ad05341010a60a397d9b
              - name: badge-7
                irk: 00112233445566778899aabbccddeeff
                address: "C0:00:00:00:00:07"
            """)
        #expect(warnings.isEmpty)
        #expect(c.identityKeys.count == 2)
        #expect(c.identityKeys[0].octets.first == 0xec && c.identityKeys[0].octets.last == 0x9b)
        // Derived: a random static address (top bits 0b11), the same on every read.
        #expect(c.identityKeys[0].identity.rawValue >> 46 == 0b11)
        let again = try read("identity_keys: [ec0234a357c8ad05341010a60a397d9b]").0
        #expect(c.identityKeys[0].identity == again.identityKeys[0].identity)
        #expect(c.identityKeys[1].identity == BDAddress("C0:00:00:00:00:07"))
        // Vol 3, Part H, Appendix D.7: prand 708194 → hash 0dfbaa under this IRK resolves to the key's identity.
        var resolver = PrivateAddressResolver(keys: c.identityKeys)
        #expect(resolver.resolve(BDAddress(rawValue: 0x7081_940d_fbaa), type: .random) == c.identityKeys[0].identity)
    }

    @Test func aShortOrDuplicateKeyIsRefusedAtItsValue() {
        let short = error("identity_keys:\n  - ec0234a357c8ad05\n")
        #expect(
            short?.path == "identity_keys[0]" && short?.line == 2 && short?.column == 5,
            "\(String(describing: short))")
        let dup = error(
            "identity_keys:\n  - ec0234a357c8ad05341010a60a397d9b\n  - {irk: EC0234A357C8AD05341010A60A397D9B}\n")
        #expect(dup?.path == "identity_keys[1].irk" && dup?.line == 3, "\(String(describing: dup))")
    }
}
