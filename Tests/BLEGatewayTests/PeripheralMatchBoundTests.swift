import BLEDomain
import BLEHCI
import BLEHost
import BLETestSupport
import BLETransport
import Foundation
import Logging
import Testing

@testable import BLEConfiguration
@testable import BLEGateway

/// A name-prefix intent matches every advertiser that claims the name: the table of matched devices keeps its bound.
struct PeripheralMatchBoundTests {
    static func sighting(_ n: Int, name: String) -> Sighting {
        let bytes = Array(name.utf8)
        let ad: [UInt8] = [0x02, 0x01, 0x06, UInt8(bytes.count + 1), 0x09] + bytes
        return Sighting(
            address: BDAddress(rawValue: 0xC0_0000_0000 + UInt64(n)), addressType: .random, rssi: -60,
            txPower: nil, timestamp: 0, isConnectable: false, isScanResponse: false,
            advertisement: Advertisement(decoding: ad[...]))
    }

    @Test func a100000AdvertisersClaimingTheNameStayWithinTheBoundAndTheEvictionsAreCounted() {
        var connections = GatewayConfiguration.Connections()
        connections.maxMatched = 32
        let published = Locked(0)
        let clock = ManualClock()
        let service = PeripheralService(
            intents: [PeripheralIntent(match: .namePrefix("Tag-"))], connections: connections, clock: clock,
            logger: Logger(label: "test"),
            output: .init(
                state: { _, _, _ in published.withLock { $0 += 1 } }, rssi: { _, _ in },
                value: { _, _, _, _, _ in }, gatt: { _, _, _ in }))
        // Addresses descending as time goes on, so that "oldest" cannot be confused with "lowest address".
        for n in 0..<100_000 {
            clock.advance(by: .milliseconds(1))
            service.observe(Self.sighting(100_000 - n, name: "Tag-\(n)"))
        }
        // Others are not matched at all.
        for n in 0..<100 { service.observe(Self.sighting(200_000 + n, name: "Other-\(n)")) }
        #expect(service.statuses.count == 32)
        #expect(service.statistics.evictedMatches == 100_000 - 32)
        // The newest are kept: the ones let go were those without a link longest.
        #expect(service.statuses.keys.map { Int($0.rawValue - 0xC0_0000_0000) }.sorted() == Array(1...32))
    }
}
