import BLEDomain
import BLEHCI
import BLESpool
import BLETransport
import Foundation
import Testing

@testable import BLEConfiguration
@testable import BLEGateway

/// Bad input (#36): a sensor that changes its address type. Some sensors advertise from a public address and, after a
/// firmware update or a battery change, from a random static one with the same six octets (or a scanner reports the
/// type differently). It is the same sensor: the same topic, so the same Home Assistant entities; a packet it already
/// sent is still a repeat (the gate knows a sensor by its six octets, so an encrypted sensor's replay floor is not
/// reset by flipping the type bit either).
@Suite struct SensorAddressTypeTests {
    static let address = BDAddress(rawValue: 0xA4C1_3800_0073)

    /// BTHome v2, unencrypted: packet id `packet`, temperature 25.00 °C.
    static func frame(packet: UInt8) -> [UInt8] {
        [0x09, 0x16, 0xD2, 0xFC, 0x40, 0x00, packet, 0x02, 0xC4, 0x09]
    }

    static func sighting(_ type: LEAddressType, packet: UInt8) -> Sighting {
        Sighting(
            address: address, addressType: type, rssi: -60, txPower: nil, timestamp: 0, isConnectable: false,
            isScanResponse: false, advertisement: Advertisement(decoding: frame(packet: packet)[...]))
    }

    @Test func aSensorThatChangesItsAddressTypeKeepsItsTopicAndItsRepeatsStayRepeats() throws {
        let dir = NSTemporaryDirectory() + "addrtype-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var c = GatewayConfiguration()
        c.spool.path = dir + "/spool.sqlite"
        c.remoteConfig.enabled = false
        c.sensors.minIntervalSeconds = 0
        let runtime = try GatewayRuntime(
            configuration: c, source: RuntimeTraceTests.Silent(), clockSynchronized: { true })
        runtime.observe(Self.sighting(.public, packet: 7))
        runtime.observe(Self.sighting(.random, packet: 7))  // the same packet, heard with the other type
        runtime.observe(Self.sighting(.random, packet: 8))
        _ = try runtime.spool.commit()
        let sensors = try runtime.spool.pending(limit: 100).map(\.reading).filter { $0.topic.contains("/sensors/") }
        #expect(
            sensors.map(\.topic) == [
                "blegateway/\(c.gateway.id)/sensors/a4c138000073",
                "blegateway/\(c.gateway.id)/sensors/a4c138000073",
            ])
        let gate = runtime.pipeline.withLock { $0.sensorGate.statistics }
        #expect(gate.published == 2)
        #expect(gate.repeats == 1, "packet 7 heard again with the other address type is a repeat")
    }
}
