import BLETransport

/// One advertisement as the controller reported it, legacy or extended, before AD decoding.
/// `data` is a slice of the event's bytes: nothing is copied.
public struct LEAdvertisingReport: Sendable {
    /// Legacy reports: 0 ADV_IND, 1 ADV_DIRECT_IND, 2 ADV_SCAN_IND, 3 ADV_NONCONN_IND, 4 SCAN_RSP
    /// (Core v5.4, Vol 4, Part E, §7.7.65.2). Extended reports: the bit field of §7.7.65.13.
    public var eventType: UInt16
    public var isExtended: Bool
    public var addressType: LEAddressType
    public var address: BDAddress
    /// dBm, or nil when the controller said 127 ("RSSI is not available").
    public var rssi: Int8?
    /// dBm, or nil when not present (127); extended reports only.
    public var txPower: Int8?
    /// Extended reports: 1 LE 1M, 3 LE Coded; legacy reports: 1.
    public var primaryPHY: UInt8
    /// Extended reports: 0 none, 1 LE 1M, 2 LE 2M, 3 LE Coded.
    public var secondaryPHY: UInt8
    /// Extended reports: advertising set id, 0xFF when none.
    public var advertisingSID: UInt8
    /// Extended reports: whether `data` completes the advertisement (see `DataStatus`).
    public var dataStatus: DataStatus
    public var data: ArraySlice<UInt8>

    /// Bits 5–6 of an extended report's event type (§7.7.65.13).
    public struct DataStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: UInt8
        @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
        public static let complete = DataStatus(rawValue: 0)
        /// More fragments follow in later reports.
        public static let incomplete = DataStatus(rawValue: 1)
        /// The controller gave up; the data is all there will be.
        public static let truncated = DataStatus(rawValue: 2)
        public var description: String {
            switch self {
            case .complete: "complete"
            case .incomplete: "incomplete"
            case .truncated: "truncated"
            default: "data-status(\(rawValue))"
            }
        }
    }

    @inlinable public init(
        eventType: UInt16, isExtended: Bool, addressType: LEAddressType, address: BDAddress, rssi: Int8?,
        txPower: Int8? = nil, primaryPHY: UInt8 = 1, secondaryPHY: UInt8 = 0, advertisingSID: UInt8 = 0xFF,
        dataStatus: DataStatus = .complete, data: ArraySlice<UInt8>
    ) {
        self.eventType = eventType
        self.isExtended = isExtended
        self.addressType = addressType
        self.address = address
        self.rssi = rssi
        self.txPower = txPower
        self.primaryPHY = primaryPHY
        self.secondaryPHY = secondaryPHY
        self.advertisingSID = advertisingSID
        self.dataStatus = dataStatus
        self.data = data
    }

    /// Connectable undirected or directed advertising (legacy ADV_IND/ADV_DIRECT_IND; extended bit 0).
    @inlinable public var isConnectable: Bool {
        isExtended ? eventType & 0x0001 != 0 : eventType == 0 || eventType == 1
    }

    /// A scan response rather than an advertisement (legacy SCAN_RSP; extended bit 3).
    @inlinable public var isScanResponse: Bool {
        isExtended ? eventType & 0x0008 != 0 : eventType == 4
    }

    /// Parses the parameters of LE Advertising Report (subevent 0x02) — everything after the
    /// subevent code — calling `body` for each report. Returns the number of reports, or nil if
    /// the event is malformed (reports before the fault have been delivered).
    ///
    /// The specification lists the parameters as arrays, but controllers (and BlueZ's btmon)
    /// lay each report out in turn: Event_Type, Address_Type, Address, Data_Length, Data, RSSI.
    @inlinable public static func parseLegacy(
        _ parameters: ArraySlice<UInt8>, _ body: (LEAdvertisingReport) -> Void
    ) -> Int? {
        var c = ByteCursor(parameters)
        guard let n = c.readU8(), n >= 1 else { return nil }
        for _ in 0..<n {
            guard let type = c.readU8(), let addrType = c.readU8(), let addr = BDAddress.read(from: &c),
                let len = c.readU8(), len <= 31, let data = c.readBytes(Int(len)), let rssi = c.readU8()
            else { return nil }
            body(
                LEAdvertisingReport(
                    eventType: UInt16(type), isExtended: false, addressType: LEAddressType(rawValue: addrType),
                    address: addr, rssi: rssi == 127 ? nil : Int8(bitPattern: rssi), data: data))
        }
        return c.isAtEnd ? Int(n) : nil
    }

    /// Parses the parameters of LE Extended Advertising Report (subevent 0x0D), as `parseLegacy`.
    /// Fragments are delivered as they come; `ExtendedAdvertisingReassembler` joins them.
    @inlinable public static func parseExtended(
        _ parameters: ArraySlice<UInt8>, _ body: (LEAdvertisingReport) -> Void
    ) -> Int? {
        var c = ByteCursor(parameters)
        guard let n = c.readU8(), n >= 1 else { return nil }
        for _ in 0..<n {
            guard let type = c.readLE16(), let addrType = c.readU8(), let addr = BDAddress.read(from: &c),
                let pphy = c.readU8(), let sphy = c.readU8(), let sid = c.readU8(), let tx = c.readU8(),
                let rssi = c.readU8(), c.skip(2 + 1 + 6),  // periodic interval, direct address type and address
                let len = c.readU8(), let data = c.readBytes(Int(len))
            else { return nil }
            body(
                LEAdvertisingReport(
                    eventType: type, isExtended: true, addressType: LEAddressType(rawValue: addrType), address: addr,
                    rssi: rssi == 127 ? nil : Int8(bitPattern: rssi), txPower: tx == 127 ? nil : Int8(bitPattern: tx),
                    primaryPHY: pphy, secondaryPHY: sphy, advertisingSID: sid,
                    dataStatus: DataStatus(rawValue: UInt8((type >> 5) & 0x3)), data: data))
        }
        return c.isAtEnd ? Int(n) : nil
    }
}
