import BLEHCI
import BLETransport
import Crypto
import Testing

@testable import BLEDomain

/// Literal frames from the formats' own documentation where they print one, else built field by
/// field from the documented layout (the comment beside each says which).
@Suite struct SensorDecoderTests {
    static let address = BDAddress("A4:C1:38:0A:0B:0C")!

    /// An advertisement holding one 16-bit Service Data structure.
    static func serviceData(_ uuid: UInt16, _ hex: String) -> Advertisement {
        let body = Vectors.hex(hex)
        let ad = [UInt8(body.count + 3), 0x16, UInt8(uuid & 0xFF), UInt8(uuid >> 8)] + body
        return Advertisement(decoding: ([0x02, 0x01, 0x06] + ad)[...])
    }

    static func manufacturer(_ company: UInt16, _ hex: String, name: String? = nil) -> Advertisement {
        let body = Vectors.hex(hex)
        var ad = [UInt8(body.count + 3), 0xFF, UInt8(company & 0xFF), UInt8(company >> 8)] + body
        if let name { ad += [UInt8(name.utf8.count + 1), 0x09] + Array(name.utf8) }
        return Advertisement(decoding: ad[...])
    }

    static func decode(_ ad: Advertisement, keys: SensorKeys = .none) -> SensorReading? {
        SensorDecoder.decode(ad, address: address, keys: keys)
    }

    static func close(_ a: Double?, _ b: Double, _ tolerance: Double = 1e-9) -> Bool {
        guard let a else { return false }
        return abs(a - b) <= tolerance
    }

    // MARK: BTHome v2

    @Test func bthomeDecodesTheSpecificationsExampleObjects() throws {
        // bthome.io/format examples: 0x02 CA09 = 25.06 °C, 0x03 BF13 = 50.55 %, 0x01 61 = 97 %,
        // 0x04 138A01 = 1008.83 hPa, 0x0C 020C = 3.074 V, 0x45 1101 = 27.3 °C, 0x57 EA = -22 °C.
        let ad = Self.serviceData(0xFCD2, "40 00 09 01 61 02 CA09 03 BF13 04 138A01 0C 020C 45 1101 57 EA")
        let r = try #require(Self.decode(ad))
        #expect(r.format == .bthome)
        #expect(r.counter == 9)
        #expect(r.issues.isEmpty)
        #expect(
            r.map(\.quantity) == [
                .packetID, .batteryPercent, .temperature, .humidity, .pressure, .voltage,
                .temperature, .temperature,
            ])
        #expect(Self.close(r[1].value, 97))
        #expect(Self.close(r[2].value, 25.06))
        #expect(Self.close(r[3].value, 50.55))
        #expect(Self.close(r[4].value, 1008.83))
        #expect(Self.close(r[5].value, 3.074))
        #expect(Self.close(r[6].value, 27.3))
        #expect(Self.close(r[7].value, -22))
    }

    @Test func bthomeDecodesBinaryEventsAndSignedFactors() throws {
        // 0x21 01 motion, 0x1A 00 door closed, 0x3A 04 long press, 0x3C 0103 dimmer left 3 steps,
        // 0x3F 020C rotation 307.4°, 0x58 36 = 54 × 0.35 °C, 0x5D 18FC = -1000 mA, 0x40 0C00 = 12 mm.
        let ad = Self.serviceData(0xFCD2, "44 1A00 2101 3A04 3C0103 3F020C 400C00 5836 5D18FC")
        let r = try #require(Self.decode(ad))
        #expect(r.issues.isEmpty)
        #expect(r.value(of: .door) == 0)
        #expect(r.value(of: .motion) == 1)
        #expect(r.value(of: .buttonEvent) == 4)
        #expect(r.value(of: .dimmerEvent) == 1)
        #expect(r.value(of: .dimmerSteps) == 3)
        #expect(Self.close(r.value(of: .rotation), 307.4))
        #expect(Self.close(r.value(of: .distance), 0.012))
        #expect(Self.close(r.value(of: .temperature), 18.9))
        #expect(Self.close(r.value(of: .current), -1.0))
    }

    /// A button or dimmer code the format does not define names no event: flagged, not published (bthome-ble
    /// publishes no event for one either), and what follows is read on.
    @Test func bthomeUndefinedEventCodesAreNotPublished() throws {
        let r = try #require(Self.decode(Self.serviceData(0xFCD2, "40 3A5C 3C9705 0161")))
        #expect(r.issues == .outOfRange)
        #expect(
            r.value(of: .buttonEvent) == nil && r.value(of: .dimmerEvent) == nil && r.value(of: .dimmerSteps) == nil)
        #expect(r.value(of: .batteryPercent) == 97)
    }

    /// Device information bit 1, as bthome-ble reads it: the MAC (6 octets, least significant first) before the
    /// objects; they are read after it, not as objects.
    @Test func bthomeWithTheMACIncludedReadsTheObjectsAfterIt() throws {
        let r = try #require(Self.decode(Self.serviceData(0xFCD2, "42 0C0B0A38C1A4 0161 02CA09")))
        #expect(r.issues.isEmpty)
        #expect(r.value(of: .batteryPercent) == 97)
        #expect(Self.close(r.value(of: .temperature), 25.06))
        let cut = try #require(Self.decode(Self.serviceData(0xFCD2, "42 0C0B0A")))
        #expect(cut.issues == .truncated && cut.count == 0)
    }

    @Test func bthomeObjectTableCoversEveryIDOfTheSpecificationAndNothingElse() {
        let defined = Set<UInt8>(Array(0x00...0x2F) + Array(0x3A...0x65) + [0xF0, 0xF1, 0xF2])
        for id in UInt8.min...UInt8.max {
            #expect((BTHomeObject.forID(id) != nil) == defined.contains(id), "object id \(id)")
        }
        // Binary sensors keep the specification's order: 0x15 battery … 0x2D window.
        #expect(BTHomeObject.forID(0x15)?.quantity == .batteryLow)
        #expect(BTHomeObject.forID(0x2D)?.quantity == .window)
        #expect(BTHomeObject.forID(0x12)?.quantity == .co2)
    }

    @Test func bthomeStopsAtAnUnknownObjectKeepingWhatCameBefore() throws {
        let r = try #require(Self.decode(Self.serviceData(0xFCD2, "40 0161 30 0264 02CA09")))
        #expect(r.issues == .unknownObject)
        #expect(r.count == 1)
        #expect(r.value(of: .batteryPercent) == 97)
    }

    @Test func bthomeTruncatedObjectIsFlaggedAndTheRestKept() throws {
        let r = try #require(Self.decode(Self.serviceData(0xFCD2, "40 0161 02CA")))
        #expect(r.issues == .truncated)
        #expect(r.count == 1)
    }

    @Test func bthomeSkipsTextRawAndCommandByTheirLengthOctet() throws {
        let r = try #require(Self.decode(Self.serviceData(0xFCD2, "40 3B 02 AA BB CC 53 03 414243 54 01 FF 0161")))
        #expect(r.issues.isEmpty)
        #expect(r.value(of: .batteryPercent) == 97)
    }

    @Test func bthomeIgnoresOtherVersions() {
        // Version bits 5–7 = 1: BTHome v1, which used a different layout.
        #expect(Self.decode(Self.serviceData(0xFCD2, "20 0161")) == nil)
    }

    static let bthomeKey = Vectors.hex("231d39c1d7cc1ab1aee224cd096db932")

    /// Seals `objects` as a BTHome v2 encrypted frame for `address` (what a device does).
    static func bthomeEncrypted(_ objects: [UInt8], counter: UInt32, key: [UInt8], address: BDAddress) -> [UInt8] {
        let info: UInt8 = 0x41
        let counterBytes = (0..<4).map { UInt8(truncatingIfNeeded: counter >> (8 * UInt32($0))) }
        let mac = (0..<6).reversed().map { UInt8(truncatingIfNeeded: address.rawValue >> (8 * UInt64($0))) }
        let nonce = mac + [0xD2, 0xFC, info] + counterBytes
        let sealed = SensorCCM.seal(plaintext: objects, nonce: nonce, tagLength: 4, key: SymmetricKey(data: key))
        return [info] + sealed.dropLast(4) + counterBytes + sealed.suffix(4)
    }

    static func hexString(_ b: [UInt8]) -> String { b.map { String($0, radix: 16).leftPadded() }.joined() }

    @Test func bthomeEncryptedFrameDecryptsWithTheKeyAndOnlyWithIt() throws {
        let frame = Self.bthomeEncrypted(
            [0x02, 0xCA, 0x09, 0x03, 0xBF, 0x13], counter: 0x0011_2233,
            key: Self.bthomeKey, address: Self.address)
        let ad = Self.serviceData(0xFCD2, Self.hexString(frame))
        let keys = SensorKeys(octets: [Self.address: Self.bthomeKey])

        let r = try #require(Self.decode(ad, keys: keys))
        #expect(r.wasEncrypted)
        #expect(r.issues.isEmpty)
        #expect(r.encryptionCounter == 0x0011_2233)
        #expect(Self.close(r.value(of: .temperature), 25.06))
        #expect(Self.close(r.value(of: .humidity), 50.55))

        let missing = try #require(Self.decode(ad))
        #expect(missing.issues == .keyMissing)
        #expect(missing.isEmpty)

        var wrongKey = Self.bthomeKey
        wrongKey[0] ^= 1
        let wrong = try #require(Self.decode(ad, keys: SensorKeys(octets: [Self.address: wrongKey])))
        #expect(wrong.issues == .authenticationFailed)
        #expect(wrong.isEmpty)

        // Another device's address changes the nonce: the MIC no longer verifies.
        let other = SensorDecoder.decode(
            ad, address: BDAddress("A4:C1:38:0A:0B:0D")!,
            keys: SensorKeys(octets: [BDAddress("A4:C1:38:0A:0B:0D")!: Self.bthomeKey]))
        #expect(other?.issues == .authenticationFailed)
    }

    @Test func ccmMatchesRFC3610PacketVector1() throws {
        // RFC 3610 §8, Packet Vector #1: key C0…CF, nonce 00000003020100A0A1A2A3A4A5, 8 octets of
        // associated data 00…07, plaintext 08…1E, M = 8.
        let key = SymmetricKey(data: Vectors.hex("C0C1C2C3C4C5C6C7C8C9CACBCCCDCECF"))
        let nonce = Vectors.hex("00000003020100A0A1A2A3A4A5")
        let aad = Vectors.hex("0001020304050607")
        let plain = Vectors.hex("08090A0B0C0D0E0F101112131415161718191A1B1C1D1E")
        let expected = Vectors.hex("588C979A61C663D2F066D0C2C0F989806D5F6B61DAC384 17E8D12CFDF926E0")
        #expect(SensorCCM.seal(plaintext: plain, nonce: nonce, aad: aad, tagLength: 8, key: key) == expected)
        let opened = SensorCCM.open(
            ciphertext: expected.prefix(23), tag: expected.suffix(8), nonce: nonce, aad: aad,
            key: key)
        #expect(opened == plain)
        var forged = expected
        forged[3] ^= 0x80
        #expect(
            SensorCCM.open(
                ciphertext: forged.prefix(23), tag: forged.suffix(8), nonce: nonce, aad: aad,
                key: key) == nil)
    }

    // MARK: ATC1441 / PVVX

    @Test func atc1441FrameIsBigEndianTenthsOfADegree() throws {
        // MAC A4C1380A0B0C, 0x00E6 = 23.0 °C, 0x2E = 46 %, 0x5D = 93 %, 0x0B8C = 2956 mV, frame 5.
        let r = try #require(Self.decode(Self.serviceData(0x181A, "A4C1380A0B0C 00E6 2E 5D 0B8C 05")))
        #expect(r.format == .atc1441)
        #expect(r.counter == 5)
        #expect(Self.close(r.value(of: .temperature), 23.0))
        #expect(r.value(of: .humidity) == 46)
        #expect(r.value(of: .batteryPercent) == 93)
        #expect(Self.close(r.value(of: .voltage), 2.956))
        // Negative: 0xFF9C = -100 tenths.
        let cold = try #require(Self.decode(Self.serviceData(0x181A, "A4C1380A0B0C FF9C 2E 5D 0B8C 06")))
        #expect(Self.close(cold.value(of: .temperature), -10.0))
    }

    @Test func pvvxFrameIsLittleEndianHundredths() throws {
        // MAC reversed, 0x0923 = 23.39 °C, 0x1397 = 50.15 %, 0x0B8C = 2956 mV, 93 %, counter 0x2A, flags 0x04.
        let r = try #require(Self.decode(Self.serviceData(0x181A, "0C0B0A38C1A4 2309 9713 8C0B 5D 2A 04")))
        #expect(r.format == .pvvx)
        #expect(r.counter == 42)
        #expect(Self.close(r.value(of: .temperature), 23.39))
        #expect(Self.close(r.value(of: .humidity), 50.15))
        #expect(Self.close(r.value(of: .voltage), 2.956))
        #expect(r.value(of: .batteryPercent) == 93)
    }

    @Test func environmentalServiceDataOfAnotherLengthIsNoSensor() {
        #expect(Self.decode(Self.serviceData(0x181A, "A4C1380A0B0C 00E6 2E 5D")) == nil)
    }

    // MARK: Xiaomi MiBeacon

    @Test func miBeaconV3PlainTemperatureAndHumidity() throws {
        // Frame control 0x3050 (v3, object and MAC included), product 0x01AA LYWSDCGQ, frame 0x47,
        // MAC reversed, object 0x100D len 4: 0x00E6 = 23.0 °C, 0x01F4 = 50.0 %.
        let r = try #require(Self.decode(Self.serviceData(0xFE95, "5030 AA01 47 0C0B0A38C1A4 0D10 04 E600 F401")))
        #expect(r.format == .miBeacon)
        #expect(r.model.description == "LYWSDCGQ")
        #expect(r.counter == 0x47)
        #expect(Self.close(r.value(of: .temperature), 23.0))
        #expect(Self.close(r.value(of: .humidity), 50.0))
    }

    /// Object 0x1001 `button | value | press type`: the same press type means a double press on the YLAI003 and a long
    /// press on the K9B switch (as xiaomi-ble reads them); on a product whose buttons the gateway does not know, or a
    /// press type that is a rotation, it is no event.
    @Test(
        arguments: [
            ("BF07", "00 00 00", 1.0), ("BF07", "00 00 01", 2.0), ("BF07", "00 00 02", 4.0), ("BF07", "01 00 03", 4.0),
            ("6815", "00 00 00", 1.0), ("6815", "00 00 01", 4.0), ("6815", "00 00 02", 2.0),
            ("6815", "01 00 00", nil), ("BF07", "00 05 04", nil), ("5B05", "00 00 00", nil),
        ] as [(String, String, Double?)])
    func miBeaconButtonPressesAreEventsAsTheProductMeansThem(_ product: String, _ button: String, _ code: Double?)
        throws
    {
        let r = try #require(Self.decode(Self.serviceData(0xFE95, "5030 \(product) 21 0C0B0A38C1A4 0110 03 \(button)")))
        #expect(r.counter == 0x21)
        #expect(r.value(of: .buttonEvent) == code)
    }

    @Test func miBeaconV5EncryptedNeedsTheBindkey() throws {
        let key = Vectors.hex("e9ea895fac7cca6d30532432a516f3a8")
        // v5, encrypted, MAC included, object included: 0x5858; product 0x055B; frame 0x12.
        let header = Vectors.hex("5858 5B05 12 0C0B0A38C1A4")
        let ext = Vectors.hex("000102")
        let nonce = Vectors.hex("0C0B0A38C1A4") + Vectors.hex("5B05 12") + ext
        let sealed = SensorCCM.seal(
            plaintext: Vectors.hex("0A10 01 5D"), nonce: nonce, aad: [0x11], tagLength: 4,
            key: SymmetricKey(data: key))
        let frame = header + sealed.dropLast(4) + ext + sealed.suffix(4)
        let ad = Self.serviceData(0xFE95, Self.hexString(frame))

        let r = try #require(Self.decode(ad, keys: SensorKeys(octets: [Self.address: key])))
        #expect(r.wasEncrypted)
        #expect(r.issues.isEmpty)
        #expect(r.model.description == "LYWSD03MMC")
        #expect(r.value(of: .batteryPercent) == 93)
        #expect(r.encryptionCounter == 0x0201_0012)

        #expect(Self.decode(ad)?.issues == .keyMissing)
    }

    // MARK: RuuviTag

    @Test func ruuviFormat3DocumentedValidDataAndASubZeroTemperature() throws {
        // docs.ruuvi.com dataformat_03 "Test vectors", valid data.
        let r = try #require(Self.decode(Self.manufacturer(0x0499, "03291A1ECE1EFC18F94202CA0B53")))
        #expect(r.format == .ruuviV3)
        #expect(r.issues.isEmpty)
        #expect(Self.close(r.value(of: .humidity), 20.5))
        #expect(Self.close(r.value(of: .temperature), 26.3))
        #expect(Self.close(r.value(of: .pressure), 1027.66))
        #expect(Self.close(r.value(of: .accelerationX), -1.0 * RuuviFrame.standardGravity))
        #expect(Self.close(r.value(of: .accelerationY), -1.726 * RuuviFrame.standardGravity))
        #expect(Self.close(r.value(of: .accelerationZ), 0.714 * RuuviFrame.standardGravity))
        #expect(Self.close(r.value(of: .voltage), 2.899))
        // The sign is the top bit of the whole degrees: 0x81 0x45 is −1.69 °C, not 1.69 nor −127.
        let cold = try #require(Self.decode(Self.manufacturer(0x0499, "03B28145CA20007A002603D0088F")))
        #expect(Self.close(cold.value(of: .temperature), -1.69))
        // One octet short: truncated, no value.
        let short = try #require(Self.decode(Self.manufacturer(0x0499, "03291A1ECE1EFC18F94202CA0B")))
        #expect(short.issues == .truncated && Array(short).isEmpty)
    }

    @Test func ruuviFormat5DocumentedValidData() throws {
        // docs.ruuvi.com dataformat_05 "Test vectors", valid data.
        let r = try #require(Self.decode(Self.manufacturer(0x0499, "0512FC5394C37C0004FFFC040CAC364200CDCBB8334C884F")))
        #expect(r.format == .ruuviV5)
        #expect(r.issues.isEmpty)
        #expect(Self.close(r.value(of: .temperature), 24.3))
        #expect(Self.close(r.value(of: .humidity), 53.49))
        #expect(Self.close(r.value(of: .pressure), 1000.44))
        #expect(Self.close(r.value(of: .accelerationX), 0.004 * RuuviFrame.standardGravity))
        #expect(Self.close(r.value(of: .accelerationY), -0.004 * RuuviFrame.standardGravity))
        #expect(Self.close(r.value(of: .accelerationZ), 1.036 * RuuviFrame.standardGravity))
        #expect(Self.close(r.value(of: .voltage), 2.977))
        #expect(r.value(of: .txPower) == 4)
        #expect(r.value(of: .movementCounter) == 66)
        #expect(r.counter == 205)
    }

    @Test func ruuviFormat5DocumentedInvalidValuesAreLeftOut() throws {
        let r = try #require(Self.decode(Self.manufacturer(0x0499, "058000FFFFFFFF800080008000FFFFFFFFFFFFFFFFFFFFFF")))
        #expect(r.isEmpty)
        #expect(r.counter == nil)
    }

    @Test func ruuviFormat5MaximumTemperatureIsFlaggedNotPublished() throws {
        // The documented maximum, 163.835 °C, is no real room: flagged out of range.
        let r = try #require(Self.decode(Self.manufacturer(0x0499, "057FFFFFFEFFFE7FFF7FFF7FFFFFDEFEFFFECBB8334C884F")))
        #expect(r.issues.contains(.outOfRange))
        #expect(r.value(of: .temperature) == nil)
        #expect(Self.close(r.value(of: .voltage), 3.646))
        #expect(r.value(of: .txPower) == 20)
    }

    @Test func ruuviFormat6FieldByField() throws {
        // Built from data-format-6: 0x170C × 0.005 = 29.5 °C, 0x5668 × 0.0025 = 55.3 %, 0xC79E + 50000 Pa =
        // 1011.02 hPa, PM2.5 0x0070 = 11.2, CO2 0x00C9 = 201, VOC 0x05 with flag bit 6 = 11, NOx 0x01 = 2,
        // luminosity code 217 = 13027 lx, sound 0x20 with flag bit 4 = 31 dBA, sequence 0xCD, flags 0x50, MAC 4C884F.
        let r = try #require(
            Self.decode(Self.manufacturer(0x0499, "06 170C 5668 C79E 0070 00C9 05 01 D9 20 CD 50 4C884F")))
        #expect(r.format == .ruuviV6)
        #expect(r.issues.isEmpty)
        #expect(Self.close(r.value(of: .temperature), 29.5))
        #expect(Self.close(r.value(of: .humidity), 55.3))
        #expect(Self.close(r.value(of: .pressure), 1011.02))
        #expect(Self.close(r.value(of: .pm25), 11.2))
        #expect(r.value(of: .co2) == 201)
        #expect(r.value(of: .vocIndex) == 11)
        #expect(r.value(of: .noxIndex) == 2)
        #expect(r.value(of: .illuminance) == 13027)
        #expect(r.value(of: .soundLevel) == 31)
        #expect(r.counter == 0xCD)
    }

    @Test func ruuviFormatE1FieldByField() throws {
        // Built from data-format-e1: PM1/2.5/4/10 in 0.1 µg/m³, luminosity 3 octets of 0.01 lx, sequence 3 octets.
        let r = try #require(
            Self.decode(
                Self.manufacturer(
                    0x0499,
                    "E1 170C 5668 C79E 000A 0070 0080 0090 00C9 05 01 0186A0 FFFFFF 000102 40 FFFFFFFFFF CBB8334C884F"))
        )
        #expect(r.format == .ruuviE1)
        #expect(Self.close(r.value(of: .pm1), 1.0))
        #expect(Self.close(r.value(of: .pm4), 12.8))
        #expect(Self.close(r.value(of: .pm10), 14.4))
        #expect(r.value(of: .vocIndex) == 11)
        #expect(Self.close(r.value(of: .illuminance), 1000.0))
        #expect(r.counter == 0x000102)
    }

    // MARK: Govee, Qingping, SwitchBot, Inkbird

    @Test func goveeH5075PackedTemperatureAndHumidity() throws {
        // 0x03A4C5 = 238789: 23.8 °C, 78.9 %; battery 0x64 = 100 %.
        let r = try #require(Self.decode(Self.manufacturer(0xEC88, "00 03A4C5 64 00")))
        #expect(Self.close(r.value(of: .temperature), 23.8))
        #expect(Self.close(r.value(of: .humidity), 78.9))
        #expect(r.value(of: .batteryPercent) == 100)
        // Bit 23: below zero. 0x80_1F40 → 8000: -0.8 °C, 0.0 %.
        let cold = try #require(Self.decode(Self.manufacturer(0xEC88, "00 801F40 50 00")))
        #expect(Self.close(cold.value(of: .temperature), -0.8))
    }

    @Test func goveeH5074LittleEndianHundredths() throws {
        let r = try #require(Self.decode(Self.manufacturer(0xEC88, "00 3E09 4B14 64 02")))
        #expect(r.model.description == "H5074")
        #expect(Self.close(r.value(of: .temperature), 23.66))
        #expect(Self.close(r.value(of: .humidity), 51.95))
    }

    @Test func qingpingTLVs() throws {
        // Frame control 0x88, device 0x10 (CGDK2), MAC, 0x01 len 4: 0x00E6 23.0 °C, 0x01F4 50.0 %; 0x02 len 1: 0x5D.
        let r = try #require(Self.decode(Self.serviceData(0xFDCD, "88 10 0C0B0A38C1A4 0104 E600F401 0201 5D")))
        #expect(r.model.description == "CGDK2")
        #expect(Self.close(r.value(of: .temperature), 23.0))
        #expect(Self.close(r.value(of: .humidity), 50.0))
        #expect(r.value(of: .batteryPercent) == 93)
    }

    @Test func switchBotMeterSignBitAndDecimal() throws {
        // 'T', status, battery 0x64, decimal 0x05, integer 0x97 (above zero, 23), humidity 0x2E.
        let r = try #require(Self.decode(Self.serviceData(0xFD3D, "54 00 64 05 97 2E")))
        #expect(Self.close(r.value(of: .temperature), 23.5))
        #expect(r.value(of: .humidity) == 46)
        let cold = try #require(Self.decode(Self.serviceData(0xFD3D, "54 00 64 05 17 2E")))
        #expect(Self.close(cold.value(of: .temperature), -23.5))
    }

    @Test func inkbirdIsRecognisedOnlyByItsName() throws {
        // "Company id" 0x093E = 23.66 °C; humidity 0x144B = 51.95 %; probe, checksum, battery 0x5D, 08.
        let r = try #require(Self.decode(Self.manufacturer(0x093E, "4B14 00 AABB 5D 08", name: "sps")))
        #expect(r.format == .inkbird)
        #expect(Self.close(r.value(of: .temperature), 23.66))
        #expect(Self.close(r.value(of: .humidity), 51.95))
        #expect(r.value(of: .batteryPercent) == 93)
        #expect(Self.decode(Self.manufacturer(0x093E, "4B14 00 AABB 5D 08", name: "other")) == nil)
    }

    /// At 11.77 °C an Inkbird's "company id" is 0x0499, Ruuvi's: its name decides, not the table of companies (the
    /// reference oracle found this one; inkbird-ble reads it as the Inkbird it is).
    @Test func anInkbirdWhoseTemperatureIsRuuvisCompanyIdIsStillAnInkbird() throws {
        let r = try #require(Self.decode(Self.manufacturer(0x0499, "4B14 00 AABB 5D 08", name: "sps")))
        #expect(r.format == .inkbird)
        #expect(Self.close(r.value(of: .temperature), 11.77))
        #expect(Self.close(r.value(of: .humidity), 51.95))
    }

    /// A Ruuvi whose name happens to be "sps": its frame is not Inkbird's nine octets, so the Inkbird decoder finds
    /// nothing and the frame is read by its company, as any other (before, the name's nil ended the decoding).
    @Test func aNameThatOnlyLooksLikeInkbirdsFallsThroughToTheOtherFormats() throws {
        let r = try #require(Self.decode(Self.manufacturer(0x0499, "03291A1ECE1EFC18F94202CA0B53", name: "sps")))
        #expect(r.format == .ruuviV3)
    }

    // MARK: Victron

    @Test func victronSolarChargerDecryptsWithTheKeyAndChecksItsFirstOctet() throws {
        // Sealed by victron-ble's own scheme (AES-CTR, IV 0x1234 little-endian) in the oracle's venv: bulk (3), no
        // error, 13.56 V, 5.2 A, 1.23 kWh today, 70 W, 0.5 A load. victron-ble decodes it to the same values.
        let ad = Self.manufacturer(0x02E1, "1000 53A0 01 3412 23 B70E646886C604F73203AECC")
        let r = try #require(Self.decode(ad, keys: SensorKeys(octets: [Self.address: Self.bthomeKey])))
        #expect(r.format == .victron)
        #expect(r.issues.isEmpty)
        #expect(r.value(of: .chargeState) == 3)
        #expect(Self.close(r.value(of: .voltage), 13.56))
        #expect(Self.close(r.value(of: .current), 5.2))
        #expect(Self.close(r.value(of: .energy), 1.23))
        #expect(r.value(of: .power) == 70)
        #expect(Self.close(r.value(of: .loadCurrent), 0.5))
        #expect(Self.decode(ad)?.issues == .keyMissing)
        var other = Self.bthomeKey
        other[0] ^= 0xFF
        #expect(Self.decode(ad, keys: SensorKeys(octets: [Self.address: other]))?.issues == .authenticationFailed)
    }

    // MARK: Dispatch

    @Test func advertisementsOfNoKnownSensorDecodeToNothing() {
        #expect(Self.decode(Advertisement(decoding: Vectors.iBeacon[...])) == nil)
        #expect(Self.decode(Advertisement(decoding: Vectors.eddystoneUID[...])) == nil)
        #expect(Advertisement(decoding: Vectors.iBeacon[...]).sensorSource == nil)
    }

    @Test func noFrameEverTraps() {
        // Every prefix of every frame above, and each with every octet replaced by 00, FF and itself ^ 80.
        let frames: [(Bool, UInt16, String)] = [
            (true, 0xFCD2, "40 0009 0161 02CA09 03BF13 04138A01 0C020C 451101 57EA 3C0103 3B02AABBCC"),
            (true, 0x181A, "0C0B0A38C1A4 2309 9713 8C0B 5D 2A 04"),
            (true, 0xFE95, "5858 5B05 12 0C0B0A38C1A4 AABBCCDD 000102 11223344"),
            (true, 0xFDCD, "88 10 0C0B0A38C1A4 0104 E600F401 0201 5D"),
            (false, 0x0499, "0512FC5394C37C0004FFFC040CAC364200CDCBB8334C884F"),
        ]
        let keys = SensorKeys(octets: [Self.address: Self.bthomeKey])
        for (isService, id, hex) in frames {
            let bytes = Vectors.hex(hex)
            for n in 0...bytes.count {
                let h = Self.hexString(Array(bytes.prefix(n)))
                _ = Self.decode(isService ? Self.serviceData(id, h) : Self.manufacturer(id, h), keys: keys)
            }
            for i in bytes.indices {
                for replacement in [0x00, 0xFF, bytes[i] ^ 0x80] {
                    var b = bytes
                    b[i] = replacement
                    let h = Self.hexString(b)
                    _ = Self.decode(isService ? Self.serviceData(id, h) : Self.manufacturer(id, h), keys: keys)
                }
            }
        }
    }
}

extension String {
    fileprivate func leftPadded() -> String { count == 1 ? "0" + self : self }
}
