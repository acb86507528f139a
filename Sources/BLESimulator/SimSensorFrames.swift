import BLEHCI
import BLETransport
import Foundation

/// A simulated sensor: broadcasts its readings in one of the formats the gateway decodes, the values
/// drifting slowly (a sine over `driftPeriod`) so dashboards have something to plot. Like a real sensor it
/// measures every `packetInterval` seconds and repeats that packet in every advertising event until the next.
/// Layouts as the formats document them (docs/SENSORS.md); built here from the bytes up, since the simulator
/// depends on wire formats only, never on the gateway's decoders.
public struct SimSensor: Sendable, Hashable {
    public enum Format: String, Sendable, Hashable, CaseIterable {
        /// BTHome v2: packet id, battery, temperature 0.01 °C, humidity 0.01 %; encrypted (AES-CCM) with a bindkey.
        case bthome = "sensor-bthome"
        /// atc1441's 13-octet custom format (service data 0x181A, big-endian).
        case atc1441 = "sensor-atc1441"
        /// pvvx's 15-octet custom format (service data 0x181A, little-endian).
        case pvvx = "sensor-pvvx"
        /// RuuviTag data format 5 (manufacturer 0x0499).
        case ruuvi = "sensor-ruuvi"
        /// Xiaomi MiBeacon v5 as an LYWSD03MMC sends it (service data 0xFE95, product 0x055B, with its MAC): one
        /// object per packet in turn, temperature 0x1004, humidity 0x1006, battery 0x100A; encrypted (AES-CCM) with a
        /// bindkey, as the stock firmware sends them.
        case mibeacon = "sensor-mibeacon"
    }

    public var format: Format
    /// The advertiser's address (ATC/PVVX and Ruuvi repeat it in the frame).
    public var address: BDAddress
    public var temperatureC: Double
    public var humidityPercent: Double
    public var batteryPercent: Double
    /// Peak deviation of the temperature (humidity moves against it, three times as far).
    public var driftC: Double
    public var driftPeriodSeconds: Double
    public var packetIntervalSeconds: Double
    /// BTHome and MiBeacon: the 16-octet key the frames are encrypted with (nil: sent in the clear).
    public var bindkey: [UInt8]?
    /// BTHome only: every this many packets the button is pressed once (a button event, 0x3A "press", in that
    /// packet); 0 for none. Two presses are the same event twice, told apart only by the packet id, which is what
    /// a consumer must count presses by.
    public var buttonEveryPackets: UInt32 = 0

    public init(
        format: Format, address: BDAddress, temperatureC: Double = 21.5, humidityPercent: Double = 45,
        batteryPercent: Double = 90, driftC: Double = 1.5, driftPeriodSeconds: Double = 600,
        packetIntervalSeconds: Double = 10, bindkey: [UInt8]? = nil, buttonEveryPackets: UInt32 = 0
    ) {
        self.bindkey = bindkey
        self.buttonEveryPackets = buttonEveryPackets
        self.format = format
        self.address = address
        self.temperatureC = temperatureC
        self.humidityPercent = humidityPercent
        self.batteryPercent = batteryPercent
        self.driftC = driftC
        self.driftPeriodSeconds = driftPeriodSeconds
        self.packetIntervalSeconds = max(0.1, packetIntervalSeconds)
    }

    /// The readings at virtual time `t` (what the ground truth would say).
    public func values(at t: Double) -> (temperature: Double, humidity: Double) {
        let phase = sin(2 * Double.pi * t / max(1, driftPeriodSeconds))
        let temperature = temperatureC + driftC * phase
        let humidity = min(100, max(0, humidityPercent - 3 * driftC * phase))
        return (temperature, humidity)
    }

    /// The packet being advertised at virtual time `t`, and the time it was measured.
    public func packet(at t: Double) -> (number: UInt32, measuredAt: Double) {
        let n = (max(0, t) / packetIntervalSeconds).rounded(.down)
        return (UInt32(truncatingIfNeeded: Int64(n)), n * packetIntervalSeconds)
    }

    /// BTHome v2 object id 0x3A (button) and its event 0x01 (press).
    static let bthomeButton: UInt8 = 0x3A
    static let bthomePress: UInt8 = 0x01

    /// MiBeacon (iot.mi.com "MiBeacon"): frame control v5 | object included | MAC included, with encrypted for a
    /// sealed frame; the LYWSD03MMC's product id; the objects it sends, one per packet, in this order.
    static let miBeaconControl: UInt16 = 5 << 12 | 1 << 6 | 1 << 4
    static let miBeaconEncrypted: UInt16 = 1 << 3
    static let miBeaconProduct: UInt16 = 0x055B
    static let miBeaconTemperature: UInt16 = 0x1004
    static let miBeaconHumidity: UInt16 = 0x1006
    static let miBeaconBattery: UInt16 = 0x100A
    /// The associated data of a v4/v5 frame's AES-CCM.
    static let miBeaconAAD: UInt8 = 0x11

    /// Whether packet `number` carries a button press (the ground truth for counting presses).
    public func isPress(_ number: UInt32) -> Bool {
        format == .bthome && buttonEveryPackets > 0 && number > 0 && number % buttonEveryPackets == 0
    }

    /// The AD structures after the flags, at virtual time `t`.
    func advertisingData(at t: Double) -> [UInt8] {
        let (packet, measuredAt) = self.packet(at: t)
        let (temperature, humidity) = values(at: measuredAt)
        let battery = UInt8(max(0, min(100, batteryPercent.rounded())))
        let millivolts = UInt16(2000 + Double(battery) * 10)
        var mac: [UInt8] = []  // most significant first
        for k in (0..<6).reversed() { mac.append(UInt8(truncatingIfNeeded: address.rawValue >> (8 * UInt64(k)))) }
        switch format {
        case .bthome:
            var objects: [UInt8] = [0x00, UInt8(truncatingIfNeeded: packet), 0x01, battery, 0x02]
            objects += le16(UInt16(bitPattern: Int16((temperature * 100).rounded())))
            objects += [0x03] + le16(UInt16((humidity * 100).rounded()))
            if isPress(packet) { objects += [Self.bthomeButton, Self.bthomePress] }
            var body: [UInt8]
            if let bindkey {
                // BTHome v2 encryption: device information 0x41 (v2, encrypted); the objects sealed with AES-CCM,
                // a 4-octet MIC, the nonce MAC (6, as written) | UUID 0xFCD2 (little-endian) | device information |
                // counter (4, little-endian); the counter follows the ciphertext in the clear, then the MIC.
                let info: UInt8 = 0x41
                let counter = le32(packet)
                let nonce = mac + [0xD2, 0xFC, info] + counter
                let sealed = SimAES.sealCCM(objects, key: bindkey, nonce: nonce, tagLength: 4)
                body = [info] + sealed.dropLast(4) + counter + sealed.suffix(4)
            } else {
                body = [0x40] + objects
            }
            return [UInt8(body.count + 3), 0x16, 0xD2, 0xFC] + body
        case .atc1441:
            var body = mac
            body += be16(UInt16(bitPattern: Int16((temperature * 10).rounded())))
            body += [UInt8(humidity.rounded()), battery] + be16(millivolts) + [UInt8(truncatingIfNeeded: packet)]
            return [UInt8(body.count + 3), 0x16, 0x1A, 0x18] + body
        case .pvvx:
            var body = Array(mac.reversed())
            body += le16(UInt16(bitPattern: Int16((temperature * 100).rounded())))
            body += le16(UInt16((humidity * 100).rounded())) + le16(millivolts)
            body += [battery, UInt8(truncatingIfNeeded: packet), 0x04]
            return [UInt8(body.count + 3), 0x16, 0x1A, 0x18] + body
        case .mibeacon:
            // Frame counter: the packet's low octet; a sealed frame carries the next three after the ciphertext.
            let object: [UInt8]
            switch packet % 3 {
            case 0:
                object =
                    le16(Self.miBeaconTemperature) + [2]
                    + le16(UInt16(bitPattern: Int16((temperature * 10).rounded())))
            case 1: object = le16(Self.miBeaconHumidity) + [2] + le16(UInt16((humidity * 10).rounded()))
            default: object = le16(Self.miBeaconBattery) + [1, battery]
            }
            let counter = UInt8(truncatingIfNeeded: packet)
            let macLE = Array(mac.reversed())
            var control = Self.miBeaconControl
            if bindkey != nil { control |= Self.miBeaconEncrypted }
            var body = le16(control) + le16(Self.miBeaconProduct) + [counter] + macLE
            if let bindkey {
                // Nonce: MAC (as in the frame) | product id | frame counter | extended counter 3; MIC 4 octets.
                let ext = Array(le32(packet).dropFirst())
                let nonce = macLE + le16(Self.miBeaconProduct) + [counter] + ext
                let sealed = SimAES.sealCCM(
                    object, key: bindkey, nonce: nonce, aad: [Self.miBeaconAAD], tagLength: 4)
                body += sealed.dropLast(4) + ext + sealed.suffix(4)
            } else {
                body += object
            }
            return [UInt8(body.count + 3), 0x16, 0x95, 0xFE] + body
        case .ruuvi:
            var body: [UInt8] = [0x05]
            body += be16(UInt16(bitPattern: Int16((temperature / 0.005).rounded())))
            body += be16(UInt16((humidity / 0.0025).rounded()))
            body += be16(UInt16(101_325 - 50_000))  // pressure: one standard atmosphere
            body += be16(0) + be16(0) + be16(1000)  // at rest: 1 g on Z
            body += be16(UInt16(millivolts - 1600) << 5 | UInt16((4 + 40) / 2))  // TX power +4 dBm
            body += [0] + be16(UInt16(truncatingIfNeeded: packet)) + mac
            return [UInt8(body.count + 3), 0xFF, 0x99, 0x04] + body
        }
    }
}

func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
func le32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
func be16(_ v: UInt16) -> [UInt8] { [UInt8(v >> 8), UInt8(v & 0xFF)] }
