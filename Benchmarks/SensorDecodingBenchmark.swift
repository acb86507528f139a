import BLEDomain
import BLEHCI
import BLETransport

// Sensor decoding (docs/SENSORS.md): what decoding sensor frames adds per report, on a corpus where 30 % of the
// reports are sensor advertisements, and what each format costs on its own. One core.
// Arguments: `--reports N` (default 1,000,000), `--passes P` (best of P; default 3).
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

private let benchAddress = BDAddress(rawValue: 0xA4C1_3800_0001)
private let benchKey: [UInt8] = [
    0x23, 0x1D, 0x39, 0xC1, 0xD7, 0xCC, 0x1A, 0xB1, 0xAE, 0xE2, 0x24, 0xCD, 0x09, 0x6D, 0xB9, 0x32,
]

/// One advertisement per format, as the formats lay them out (the values matter little to the cost).
private func sensorAdvertisements() -> [(String, [UInt8])] {
    func service(_ uuid: UInt16, _ body: [UInt8]) -> [UInt8] {
        [0x02, 0x01, 0x06, UInt8(body.count + 3), 0x16, UInt8(uuid & 0xFF), UInt8(uuid >> 8)] + body
    }
    func manufacturer(_ company: UInt16, _ body: [UInt8]) -> [UInt8] {
        [0x02, 0x01, 0x06, UInt8(body.count + 3), 0xFF, UInt8(company & 0xFF), UInt8(company >> 8)] + body
    }
    let mac: [UInt8] = [0xA4, 0xC1, 0x38, 0x00, 0x00, 0x01]
    let bthomePlain: [UInt8] = [0x02, 0xCA, 0x09, 0x03, 0xBF, 0x13, 0x01, 0x61]
    // BTHome encrypted under `benchKey` for `benchAddress`: device info 0x41, counter 0x00112233.
    let counter: [UInt8] = [0x33, 0x22, 0x11, 0x00]
    let nonce = mac + [0xD2, 0xFC, 0x41] + counter
    let sealed = SensorCCM.seal(plaintext: bthomePlain, nonce: nonce, tagLength: 4, keyOctets: benchKey)
    let ext: [UInt8] = [0x01, 0x00, 0x00]
    let miHead: [UInt8] = [0x58, 0x58, 0x5B, 0x05, 0x12] + mac.reversed()
    let miSealed = SensorCCM.seal(
        plaintext: [0x0D, 0x10, 0x04, 0xE6, 0x00, 0xF4, 0x01], nonce: Array(mac.reversed()) + [0x5B, 0x05, 0x12] + ext,
        aad: [0x11], tagLength: 4, keyOctets: benchKey)
    return [
        ("bthome", service(0xFCD2, [0x40, 0x00, 0x09] + bthomePlain)),
        ("bthome-encrypted", service(0xFCD2, [0x41] + sealed.dropLast(4) + counter + sealed.suffix(4))),
        ("atc1441", service(0x181A, mac + [0x00, 0xE6, 0x2E, 0x5D, 0x0B, 0x8C, 0x05])),
        ("pvvx", service(0x181A, Array(mac.reversed()) + [0x23, 0x09, 0x97, 0x13, 0x8C, 0x0B, 0x5D, 0x2A, 0x04])),
        (
            "mibeacon",
            service(
                0xFE95, [0x50, 0x30, 0xAA, 0x01, 0x47] + mac.reversed() + [0x0D, 0x10, 0x04, 0xE6, 0x00, 0xF4, 0x01])
        ),
        ("mibeacon-encrypted", service(0xFE95, miHead + miSealed.dropLast(4) + ext + miSealed.suffix(4))),
        (
            "ruuvi-5",
            manufacturer(
                0x0499,
                [
                    0x05, 0x12, 0xFC, 0x53, 0x94, 0xC3, 0x7C, 0x00, 0x04, 0xFF, 0xFC, 0x04, 0x0C, 0xAC, 0x36, 0x42,
                    0x00, 0xCD,
                ] + mac)
        ),
        (
            "ruuvi-6",
            manufacturer(
                0x0499,
                [
                    0x06, 0x17, 0x0C, 0x56, 0x68, 0xC7, 0x9E, 0x00, 0x70, 0x00, 0xC9, 0x05, 0x01, 0xD9, 0x20, 0xCD,
                    0x50,
                    0x4C, 0x88, 0x4F,
                ])
        ),
        // Victron solar charger, sealed under `benchKey` (SensorDecoderTests has the same frame).
        (
            "victron-encrypted",
            manufacturer(
                0x02E1,
                [
                    0x10, 0x00, 0x53, 0xA0, 0x01, 0x34, 0x12, 0x23, 0xB7, 0x0E, 0x64, 0x68, 0x86, 0xC6, 0x04, 0xF7,
                    0x32,
                    0x03, 0xAE, 0xCC,
                ])
        ),
        ("govee", manufacturer(0xEC88, [0x00, 0x03, 0xA4, 0xC5, 0x64, 0x00])),
        (
            "qingping",
            service(0xFDCD, [0x88, 0x10] + mac.reversed() + [0x01, 0x04, 0xE6, 0x00, 0xF4, 0x01, 0x02, 0x01, 0x5D])
        ),
        ("switchbot", service(0xFD3D, [0x54, 0x00, 0x64, 0x05, 0x97, 0x2E])),
    ]
}

/// 40 % iBeacon, 20 % Eddystone-UID, 10 % other devices, 30 % sensors (the unencrypted formats in turn), as legacy
/// LE Advertising Report events in H4 framing (Core v5.4, Vol 4, Part E, §7.7.65.2).
private func corpus(count: Int) -> [UInt8] {
    let sensors = sensorAdvertisements().filter { !$0.0.hasSuffix("encrypted") }.map(\.1)
    var out = ByteWriter(capacity: count * 50)
    var state: UInt64 = 0x5E45
    for n in 0..<count {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        let roll = Int(state >> 33) % 100
        var ad: [UInt8]
        if roll < 40 {
            ad =
                [0x02, 0x01, 0x06, 0x1A, 0xFF, 0x4C, 0x00, 0x02, 0x15] + [UInt8](repeating: 0xE2, count: 16)
                + [0x00, 0x01, 0x00, UInt8(n & 0x3F), 0xC5]
        } else if roll < 60 {
            ad =
                [0x02, 0x01, 0x06, 0x03, 0x03, 0xAA, 0xFE, 0x17, 0x16, 0xAA, 0xFE, 0x00, 0xE7]
                + [UInt8](repeating: 0xED, count: 10) + [0, 0, 0, 0, 0, UInt8(n & 0xFF), 0, 0]
        } else if roll < 70 {
            ad = [0x02, 0x01, 0x06, 0x05, 0x03, 0x0D, 0x18, 0x0F, 0x18, 0x08, 0x09] + Array("Sensor1".utf8)
        } else {
            ad = sensors[n % sensors.count]
        }
        // Sensors that repeat their MAC in the frame are heard from that MAC (else they are ignored, not decoded).
        let address = roll >= 70 ? benchAddress.rawValue : UInt64(0xC000_0000_0000) | UInt64(n % 400)
        var ev = ByteWriter(capacity: 48)
        ev.u8(0x03)  // ADV_NONCONN_IND
        ev.u8(0x01)
        BDAddress(rawValue: address).write(to: &ev)
        ev.u8(UInt8(ad.count))
        ev.append(ad)
        ev.u8(0xC4)  // −60 dBm
        out.append([0x04, 0x3E, UInt8(2 + ev.bytes.count), 0x02, 0x01] as [UInt8])
        out.append(ev.bytes)
    }
    return out.bytes
}

private func cpuNanoseconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Double(ts.tv_sec) * 1e9 + Double(ts.tv_nsec)
}

/// Walks the H4 stream into sightings; with `sensors`, decodes each sensor frame the one pass found.
private func decode(_ stream: [UInt8], sensors: Bool, keys: SensorKeys) -> (reports: Int, sensors: Int, digest: UInt64)
{
    var reports = 0
    var decoded = 0
    var digest: UInt64 = 0
    var i = 0
    while i + 4 <= stream.count {
        let end = i + 3 + Int(stream[i + 2])
        _ = LEAdvertisingReport.parseLegacy(stream[(i + 4)..<end]) { r in
            let s = Sighting(report: r, timestamp: 1.7e9)
            reports += 1
            digest = (digest ^ s.address.rawValue) &* 0x100_0000_01B3
            guard sensors, s.advertisement.sensorSource != nil,
                let reading = SensorDecoder.decode(s.advertisement, address: s.address, keys: keys)
            else { return }
            decoded += 1
            digest = (digest ^ UInt64(reading.count) ^ (reading.first?.value.bitPattern ?? 0)) &* 0x100_0000_01B3
        }
        i = end
    }
    return (reports, decoded, digest)
}

public func runSensorDecodingBenchmark(arguments: [String]) {
    func value(_ name: String, _ fallback: Int) -> Int {
        guard let k = arguments.firstIndex(of: name), k + 1 < arguments.count, let v = Int(arguments[k + 1]) else {
            return fallback
        }
        return v
    }
    let count = value("--reports", 1_000_000)
    let passes = max(1, value("--passes", 3))
    let stream = corpus(count: count)
    let keys = SensorKeys(octets: [benchAddress: benchKey])
    let plainFormats = sensorAdvertisements().filter { !$0.0.hasSuffix("encrypted") }.count
    print("sensor decoding: \(count) reports, 30 % sensor frames (\(plainFormats) formats in turn)")

    func best(_ body: () -> Void) -> Double {
        var b = Double.infinity
        for _ in 0..<passes {
            let t0 = cpuNanoseconds()
            body()
            b = min(b, cpuNanoseconds() - t0)
        }
        return b
    }
    var without = (reports: 0, sensors: 0, digest: UInt64(0))
    var with = without
    _ = decode(stream, sensors: true, keys: keys)  // warm-up
    let plain = best { without = decode(stream, sensors: false, keys: keys) }
    let full = best { with = decode(stream, sensors: true, keys: keys) }
    let n = Double(max(with.reports, 1))
    print(
        "  advertisements only: \(fmt(plain / n)) ns/report; with sensor decoding: \(fmt(full / n)) ns/report "
            + "(+\(fmt((full - plain) / n)) ns) [budget ≤ 150 ns]; \(with.sensors) sensor readings, digest "
            + "\(String(with.digest ^ without.digest, radix: 16))")

    // Per format: the sensor decoder alone on an advertisement already decoded (the one pass found the frame).
    for (name, bytes) in sensorAdvertisements() {
        let ad = Advertisement(decoding: bytes[...])
        let iterations = name.hasSuffix("encrypted") ? 20_000 : 1_000_000
        var sink = 0
        let t = best {
            for _ in 0..<iterations {
                sink &+= SensorDecoder.decode(ad, address: benchAddress, keys: keys)?.count ?? -1_000_000
            }
        }
        print("  \(name): \(fmt(t / Double(iterations))) ns/frame (\(sink / (iterations * passes)) values)")
    }
}

private func fmt(_ x: Double) -> String {
    let r = (x * 10).rounded() / 10
    return r >= 100 ? "\(Int(r))" : "\(r)"
}
