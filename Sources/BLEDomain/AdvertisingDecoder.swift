import BLETransport

/// The decoded contents of advertising (or scan response) data.
///
/// Built in one pass over the AD structures without allocating: fixed-size fields are decoded,
/// variable-length ones (name, manufacturer data) are remembered as index ranges into `data`,
/// which is a slice of the HCI event's bytes. Lists (service UUIDs, service data) are walked again
/// when someone asks, since most consumers never do.
public struct Advertisement: Sendable {
    /// The AD structures as received.
    public var data: ArraySlice<UInt8>
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

    /// Decodes `data`. Never traps, whatever the bytes.
    @inlinable public init(decoding data: ArraySlice<UInt8>) {
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

        var it = AdvertisingStructureIterator(data)
        while let s = it.next() {
            structureCount &+= structureCount == .max ? 0 : 1
            let v = s.value
            switch s.type {
            case .flags:
                // CSS Part A §1.3: "The Flags data type shall be … one octet"; later octets are reserved.
                if let f = v.first { flags = f } else { issues.insert(.badFieldLength) }
            case .incompleteServiceUUIDs16, .completeServiceUUIDs16, .incompleteServiceUUIDs32,
                .completeServiceUUIDs32, .incompleteServiceUUIDs128, .completeServiceUUIDs128:
                if v.count % (s.type.uuidWidth ?? 1) != 0 { issues.insert(.badFieldLength) }
            case .shortenedLocalName:
                if !nameIsCompleteFlag { nameRange = v.indices }
            case .completeLocalName:
                nameRange = v.indices
                nameIsCompleteFlag = true
            case .txPowerLevel:
                if v.count == 1 {
                    txPowerLevel = Int8(bitPattern: v[v.startIndex])
                } else {
                    issues.insert(.badFieldLength)
                }
            case .appearance:
                var c = ByteCursor(v)
                if v.count == 2, let a = c.readLE16() { appearance = a } else { issues.insert(.badFieldLength) }
            case .serviceData16:
                var c = ByteCursor(v)
                guard let uuid = c.readLE16() else {
                    issues.insert(.badFieldLength)
                    break
                }
                if beacon == nil { beacon = Beacon.fromServiceData16(uuid: uuid, data: c.rest) }
            case .serviceData32, .serviceData128:
                if v.count < s.type.uuidWidth! { issues.insert(.badFieldLength) }
            case .manufacturerSpecificData:
                var c = ByteCursor(v)
                guard let company = c.readLE16() else {
                    issues.insert(.badFieldLength)
                    break
                }
                if manufacturerRange == nil {
                    manufacturerRange = c.rest.indices
                    manufacturerCompany = company
                }
                if beacon == nil { beacon = Beacon.fromManufacturerData(company: company, data: c.rest) }
            default:
                break
            }
        }
        issues.formUnion(it.issues)
    }

    /// The local name's raw octets (complete preferred over shortened), without decoding them.
    @inlinable public var nameBytes: ArraySlice<UInt8>? { nameRange.map { data[$0] } }

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
            guard let width = s.type.uuidWidth, s.type == .serviceData16 || s.type == .serviceData32
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
