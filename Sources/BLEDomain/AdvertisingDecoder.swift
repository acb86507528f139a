import BLEHCI
import BLETransport

/// The decoded contents of advertising (or scan response) data.
///
/// Built in one pass over the AD structures without allocating: fixed-size fields are decoded,
/// variable-length ones (name, manufacturer data) are remembered as index ranges into `data`,
/// which is a slice of the HCI event's bytes. Lists (service UUIDs, service data) are walked again
/// when someone asks, since most consumers never do.
public struct Advertisement: Sendable {
    /// The AD structures as received (immutable: the name and manufacturer ranges index into it).
    public let data: ArraySlice<UInt8>
    /// Flags (0x01), e.g. 0x06 = LE General Discoverable | BR/EDR Not Supported.
    public var flags: UInt8?
    /// TX Power Level (0x0A), dBm.
    public var txPowerLevel: Int8?
    /// Appearance (0x19), Assigned Numbers §2.6.
    public var appearance: UInt16?
    /// The first beacon frame found, if any.
    public var beacon: Beacon?
    /// Faults met while decoding; the fields above hold what could be read before and around them.
    public var issues: AdvertisingIssues
    /// AD structures seen (saturating).
    public var structureCount: UInt8

    @usableFromInline var nameRange: Range<Int>?
    @usableFromInline var nameIsCompleteFlag: Bool
    @usableFromInline var manufacturerRange: Range<Int>?
    @usableFromInline var manufacturerCompany: UInt16
    /// The first structure the sensor table recognised (see `SensorSource`), after its UUID or company id.
    @usableFromInline var sensorRange: Range<Int>?
    @usableFromInline var sensorKind: UInt8

    /// Decodes `data`. Never traps, whatever the bytes.
    @inlinable public init(decoding data: ArraySlice<UInt8>) {
        self = data.withUnsafeBufferPointer { Advertisement(data: data, bytes: $0) }
    }

    /// One pass over the AD structures `Length | AD Type | AD Data` (Core v5.4, Vol 3, Part C, §11),
    /// with the same rules as `AdvertisingStructureIterator`, reading through `ADReader`.
    @inlinable init(data: ArraySlice<UInt8>, bytes: UnsafeBufferPointer<UInt8>) {
        self.data = data
        flags = nil
        txPowerLevel = nil
        appearance = nil
        beacon = nil
        issues = []
        structureCount = 0
        nameRange = nil
        nameIsCompleteFlag = false
        manufacturerRange = nil
        manufacturerCompany = 0
        sensorRange = nil
        sensorKind = 0

        if bytes.count > AdvertisingStructureIterator.maximumDataLength { issues.insert(.oversized) }
        let origin = data.startIndex
        var r = ADReader(bytes)
        while let length = r.readU8() {
            guard length > 0 else {
                // "shall only occur to allow an early termination": zero padding may follow, nothing else.
                if r.restHasNonZero() { issues.insert(.zeroLength) }
                break
            }
            guard var v = r.readReader(Int(length)), let type = v.readU8() else {
                issues.insert(.truncated)
                break
            }
            structureCount &+= structureCount == .max ? 0 : 1
            let valueRange = (origin + v.position)..<(origin + v.end)
            // Literal cases (names beside them) compile to a jump table; see AdvertisingDataType.
            switch type {
            case 0x01:  // flags
                // CSS Part A §1.3: "The Flags data type shall be … one octet"; later octets are reserved.
                if let f = v.readU8() { flags = f } else { issues.insert(.badFieldLength) }
            case 0x02...0x07:  // service UUID lists, 16/32/128-bit, incomplete/complete
                if v.remaining % (AdvertisingDataType(rawValue: type).uuidWidth ?? 1) != 0 {
                    issues.insert(.badFieldLength)
                }
            case 0x08:  // shortened local name
                if !nameIsCompleteFlag { nameRange = valueRange }
            case 0x09:  // complete local name
                nameRange = valueRange
                nameIsCompleteFlag = true
            case 0x0A:  // TX power level
                if v.remaining == 1, let t = v.readI8() {
                    txPowerLevel = t
                } else {
                    issues.insert(.badFieldLength)
                }
            case 0x19:  // appearance
                if v.remaining == 2, let a = v.readLE16() { appearance = a } else { issues.insert(.badFieldLength) }
            case 0x16:  // service data, 16-bit UUID
                guard let uuid = v.readLE16() else {
                    issues.insert(.badFieldLength)
                    break
                }
                if beacon == nil { beacon = Beacon.fromServiceData16(uuid: uuid, data: v) }
                if sensorKind == 0, let k = SensorSource.forServiceData16(uuid) {
                    sensorKind = k.rawValue
                    sensorRange = (origin + v.position)..<(origin + v.end)
                }
            case 0x20, 0x21:  // service data, 32/128-bit UUID
                if v.remaining < (type == 0x20 ? 4 : 16) { issues.insert(.badFieldLength) }
            case 0xFF:  // manufacturer specific data
                guard let company = v.readLE16() else {
                    issues.insert(.badFieldLength)
                    break
                }
                if manufacturerRange == nil {
                    manufacturerRange = (origin + v.position)..<(origin + v.end)
                    manufacturerCompany = company
                }
                if beacon == nil { beacon = Beacon.fromManufacturerData(company: company, data: v) }
                if sensorKind == 0, let k = SensorSource.forCompany(company) {
                    sensorKind = k.rawValue
                    sensorRange = (origin + v.position)..<(origin + v.end)
                }
            default:
                break
            }
        }
    }

    /// Which sensor table entry matched, if any (decode it with `SensorDecoder`).
    @inlinable public var sensorSource: SensorSource? { sensorKind == 0 ? nil : SensorSource(rawValue: sensorKind) }

    /// The local name's raw octets (complete preferred over shortened), without decoding them, up to the first NUL:
    /// devices pad names with NULs (a fixed-size buffer sent whole), and BlueZ and tshark read the name as a C string.
    @inlinable public var nameBytes: ArraySlice<UInt8>? { nameRange.map { data[$0].prefix { $0 != 0 } } }

    /// Whether `name` is the Complete Local Name (0x09) rather than the Shortened one (0x08).
    @inlinable public var nameIsComplete: Bool { nameIsCompleteFlag }

    /// The local name, decoded as UTF-8 only when asked; invalid sequences become U+FFFD.
    public var name: String? { nameBytes.map { String(decoding: $0, as: UTF8.self) } }

    /// The first Manufacturer Specific Data structure.
    @inlinable public var manufacturerData: ManufacturerData? {
        manufacturerRange.map { ManufacturerData(companyID: manufacturerCompany, data: data[$0]) }
    }

    /// Every service UUID from the 16-, 32- and 128-bit lists, complete or not, in order.
    public var serviceUUIDs: [BluetoothUUID] {
        var out: [BluetoothUUID] = []
        forEachServiceUUID { out.append($0) }
        return out
    }

    /// Every Service Data structure (16-, 32- and 128-bit UUIDs), in order.
    public var serviceData: [ServiceData] {
        var out: [ServiceData] = []
        for s in AdvertisingStructures(data) {
            guard let width = s.type.uuidWidth,
                s.type == .serviceData16 || s.type == .serviceData32
                    || s.type == .serviceData128, s.value.count >= width,
                let uuid = AdvertisingDataType.readUUID(s.value.prefix(width), width: width)
            else { continue }
            out.append(ServiceData(uuid: uuid, data: s.value.dropFirst(width)))
        }
        return out
    }

    /// Calls `body` for each listed service UUID, without allocating.
    @inlinable public func forEachServiceUUID(_ body: (BluetoothUUID) -> Void) {
        for s in AdvertisingStructures(data) {
            guard s.type.rawValue >= 0x02 && s.type.rawValue <= 0x07, let width = s.type.uuidWidth else { continue }
            var c = ByteCursor(s.value)
            while let chunk = c.readBytes(width) {
                if let u = AdvertisingDataType.readUUID(chunk, width: width) { body(u) }
            }
        }
    }

    /// Whether `uuid` appears in a service UUID list or as a service data UUID. Does not allocate.
    @inlinable public func mentionsService(_ uuid: BluetoothUUID) -> Bool {
        for s in AdvertisingStructures(data) {
            guard let width = s.type.uuidWidth else { continue }
            var c = ByteCursor(s.value)
            let isList = s.type.rawValue <= 0x07
            while let chunk = c.readBytes(width) {
                if AdvertisingDataType.readUUID(chunk, width: width) == uuid { return true }
                if !isList { break }  // service data: only the leading UUID
            }
        }
        return false
    }
}

/// Manufacturer Specific Data (CSS Part A §1.4): a company identifier, then the company's octets.
public struct ManufacturerData: Hashable, Sendable {
    /// Bluetooth SIG company identifier (Assigned Numbers §7), e.g. 0x004C Apple.
    public var companyID: UInt16
    public var data: ArraySlice<UInt8>

    @inlinable public init(companyID: UInt16, data: ArraySlice<UInt8>) {
        self.companyID = companyID
        self.data = data
    }
}

/// Service Data (CSS Part A §1.11): a service UUID, then the service's octets.
public struct ServiceData: Hashable, Sendable {
    public var uuid: BluetoothUUID
    public var data: ArraySlice<UInt8>

    @inlinable public init(uuid: BluetoothUUID, data: ArraySlice<UInt8>) {
        self.uuid = uuid
        self.data = data
    }
}
