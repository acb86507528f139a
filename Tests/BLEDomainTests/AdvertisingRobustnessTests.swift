import BLEHCI
import BLETransport
import Foundation
import Testing

@testable import BLEDomain

/// Property-style checks: whatever the bytes, decoding returns (no trap), the JSON line stays one
/// valid JSON object, and truncation is reported rather than invented.
@Suite struct AdvertisingRobustnessTests {
    /// SplitMix64: a tiny deterministic generator so failures reproduce.
    struct SplitMix64: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static let vectors = [
        Vectors.iBeacon, Vectors.eddystoneUID, Vectors.eddystoneURL, Vectors.eddystoneTLM, Vectors.eddystoneETLM,
        Vectors.eddystoneEID, Vectors.altBeacon, Vectors.heartRate, Vectors.nordicUART,
    ]

    func checkJSON(_ ad: Advertisement) throws {
        let s = Sighting(
            address: BDAddress(rawValue: 1), addressType: .public, rssi: nil, txPower: nil, timestamp: 0,
            isConnectable: false, isScanResponse: false, advertisement: ad)
        let line = s.jsonLine
        #expect(!line.utf8.contains(where: { $0 < 0x20 }))
        _ = try JSONSerialization.jsonObject(with: Data(line.utf8))
    }

    @Test func everyTruncationOfEveryVectorDecodesAndIsFlaggedWhenCutInsideAStructure() throws {
        for v in Self.vectors {
            // Where each structure ends: a cut anywhere else is inside one.
            var ends: Set<Int> = [0]
            var i = 0
            while i < v.count {
                i += 1 + Int(v[i])
                ends.insert(i)
            }
            for n in 0...v.count {
                let ad = Advertisement(decoding: v.prefix(n))
                #expect(ad.issues.contains(.truncated) == !ends.contains(n), "cut at \(n) of \(v)")
                try checkJSON(ad)
            }
        }
    }

    @Test func randomBytesNeverTrapAndAlwaysEncodeAsValidJSON() throws {
        var rng = SplitMix64(state: 0x5EED)
        for round in 0..<20_000 {
            let n = Int(rng.next() % 64)
            var bytes = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
            // Half the time, start from a real vector and corrupt a few octets: deeper paths.
            if round % 2 == 0 {
                bytes = Self.vectors[Int(rng.next() % UInt64(Self.vectors.count))]
                for _ in 0..<(1 + rng.next() % 3) {
                    bytes[Int(rng.next() % UInt64(bytes.count))] = UInt8.random(in: 0...255, using: &rng)
                }
            }
            let ad = Advertisement(decoding: bytes[...])
            // The hot-path decoder and the general walker must agree on structural faults.
            var it = AdvertisingStructureIterator(bytes[...])
            var walked = 0
            while it.next() != nil { walked += 1 }
            #expect(it.issues == ad.issues.subtracting(.badFieldLength), "\(bytes)")
            #expect(walked == Int(ad.structureCount))
            _ = ad.serviceUUIDs
            _ = ad.serviceData
            _ = ad.name
            try checkJSON(ad)
        }
    }

    @Test func randomEventsNeverTrapTheReportParsersOrTheDecoder() {
        var rng = SplitMix64(state: 42)
        var decoded = 0
        for _ in 0..<5_000 {
            var event =
                rng.next() % 2 == 0
                ? Vectors.legacyEvent(data: Self.vectors[Int(rng.next() % 9)])
                : Vectors.extendedEvent(data: Self.vectors[Int(rng.next() % 9)])
            let k = Int(rng.next() % UInt64(event.count - 4)) + 4
            event[k] = UInt8.random(in: 0...255, using: &rng)
            decoded += Vectors.sightings(fromH4: event).count
        }
        // Most corruptions hit data or RSSI, which still parse: proves the loop exercised the decoder.
        #expect(decoded > 1_000)
    }
}
