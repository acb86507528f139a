import BLEHCI
import BLEHost
import BLEPublishing
import BLETransport
import Foundation
import Testing

@testable import BLEConfiguration
@testable import BLEGateway

/// Retained states whose size the outside world decides (a peripheral's GATT tree, a document's issues) stay within
/// their budget, with a count of what was left out.
struct StateBudgetTests {
    static let readings = try! GatewayReadings(
        topics: Topics(prefix: "bg", gatewayID: "gw"), run: "0123abcd",
        version: "test", started: 0, sampleQoS: 1, sampleExpiry: nil)

    static func json(_ body: [UInt8]) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
    }

    @Test func aGATTServerWithThousandsOfAttributesIsPublishedWithinTheBudgetAndSaysWhatWasLeftOut() throws {
        // 6,000 services of 3 characteristics with a CCCD each: about 60,000 handles, the most a server can have.
        let services = (0..<6000).map { s -> GATTService in
            let base = UInt16(1 + s * 10)
            let chars = (0..<3).map { (c: Int) -> GATTCharacteristic in
                let h: UInt16 = base + UInt16(c * 3)
                let cccd = GATTDescriptor(handle: h + 3, uuid: BluetoothUUID(uuid16: 0x2902))
                return GATTCharacteristic(
                    uuid: BluetoothUUID(uuid16: 0x2A00 + UInt16(c)), declarationHandle: h + 1,
                    valueHandle: h + 2, endHandle: h + 3, properties: .init(rawValue: 0x12),
                    descriptors: [cccd])
            }
            return GATTService(
                uuid: BluetoothUUID(uuid16: 0x1800 + UInt16(s % 100)), startHandle: base,
                endHandle: base + 9, characteristics: chars)
        }
        let big = Self.readings.peripheralGATT(
            BDAddress(rawValue: 0xA4C1_3800_0001), mtu: 247,
            database: GATTDatabase(services: services), ts: 1, synced: true)
        #expect(big.body.count <= GatewayReadings.maxStateBytes + 256)
        let o = try Self.json(big.body)
        let kept = (o["services"] as? [Any])?.count ?? 0
        #expect(kept > 0)
        #expect(o["truncated_services"] as? Int == 6000 - kept)

        let small = Self.readings.peripheralGATT(
            BDAddress(rawValue: 0xA4C1_3800_0001), mtu: 23,
            database: GATTDatabase(services: Array(services.prefix(2))), ts: 1, synced: true)
        let s = try Self.json(small.body)
        #expect((s["services"] as? [Any])?.count == 2 && s["truncated_services"] == nil)
    }

    @Test func aVerdictWithThousandsOfLongIssuesStaysWithinTheBudgetAndCountsTheRest() throws {
        let errors = (0..<10_000).map {
            ConfigIssue(path: "$.regions[\($0)].id", reason: String(repeating: "x", count: 5000))
        }
        let outcome = RemoteConfigController.Outcome(
            status: .rejected, layer: .gateway, version: 3, errors: errors,
            warnings: [ConfigIssue(path: "$.a", reason: "unknown key")],
            effective: GatewayConfiguration())
        let state = Self.readings.configState(
            outcome, hash: "sha256:" + String(repeating: "0", count: 64), layers: [:],
            restartRequired: [], ts: 1, synced: true)
        #expect(state.body.count <= GatewayReadings.maxStateBytes)
        let o = try Self.json(state.body)
        let kept = try #require(o["errors"] as? [[String: Any]])
        #expect(!kept.isEmpty && kept.allSatisfy { ($0["reason"] as? String)?.count == 1000 })
        #expect((kept.first?["reason"] as? String)?.hasSuffix("…") == true)
        #expect(o["truncated_errors"] as? Int == 10_000 - kept.count)
        #expect((o["warnings"] as? [Any])?.count == 1 && o["truncated_warnings"] == nil)
    }
}
