import BLEHCI
import BLETransport

/// One advertisement (or scan response) as the scanner delivers it: the data is owned, since it outlives
/// the event buffer, and extended advertising fragments have been joined.
public struct ScanReport: Sendable, Hashable {
    public var address: BDAddress
    public var addressType: LEAddressType
    /// dBm; nil when the controller had none (127).
    public var rssi: Int8?
    public var txPower: Int8?
    /// Legacy PDU type or extended event-type bits, as in `LEAdvertisingReport.eventType`.
    public var eventType: UInt16
    public var isExtended: Bool
    public var isConnectable: Bool
    public var isScanResponse: Bool
    public var primaryPHY: UInt8
    public var secondaryPHY: UInt8
    public var advertisingSID: UInt8
    /// The AD structures (Core Supplement, Part A), undecoded.
    public var data: [UInt8]
    /// The controller truncated the advertising data: `data` is what there was.
    public var isTruncated: Bool
    /// Monotonic time of reception, on the injected clock.
    public var receivedAt: Duration
    /// Wall-clock time of reception, seconds since 1970, on the injected clock.
    public var unixTime: Double

    public init(_ r: LEAdvertisingReport, isTruncated: Bool, receivedAt: Duration, unixTime: Double) {
        address = r.address
        addressType = r.addressType
        rssi = r.rssi
        txPower = r.txPower
        eventType = r.eventType
        isExtended = r.isExtended
        isConnectable = r.isConnectable
        isScanResponse = r.isScanResponse
        primaryPHY = r.primaryPHY
        secondaryPHY = r.secondaryPHY
        advertisingSID = r.advertisingSID
        data = Array(r.data)
        self.isTruncated = isTruncated
        self.receivedAt = receivedAt
        self.unixTime = unixTime
    }
}

/// Turns controller events into scan reports: walks the report events without copying, joins extended
/// fragments, copies each finished advertisement's data once, and counts what it could not use.
/// No I/O: the scanner feeds it.
public struct ScanReportAssembler: Sendable {
    public struct Counters: Sendable, Hashable {
        public var reports = 0
        /// Advertising report events that did not parse (also any other malformed packet is counted in
        /// `malformedPackets`).
        public var malformedAdvertisingEvents = 0
        public var malformedPackets = 0
        public var reassembly = ExtendedAdvertisingReassembler.Counters()
    }

    var reassembler: ExtendedAdvertisingReassembler
    var _counters = Counters()

    public init(reassembly: ExtendedAdvertisingReassembler.Configuration = .init()) {
        reassembler = ExtendedAdvertisingReassembler(configuration: reassembly)
    }

    public var counters: Counters {
        var c = _counters
        c.reassembly = reassembler.counters
        return c
    }

    public mutating func handle(
        _ event: HCIControllerEvent, now: Duration, unixTime: Double, _ deliver: (ScanReport) -> Void
    ) {
        switch event {
        case .event(.leAdvertisingReport(let params)):
            _ = LEAdvertisingReport.parseLegacy(params) { r in
                _counters.reports += 1
                deliver(ScanReport(r, isTruncated: false, receivedAt: now, unixTime: unixTime))
            }
        case .event(.leExtendedAdvertisingReport(let params)):
            _ = LEAdvertisingReport.parseExtended(params) { r in
                guard let a = reassembler.accept(r, now: now) else { return }
                _counters.reports += 1
                deliver(ScanReport(a.report, isTruncated: a.isTruncated, receivedAt: now, unixTime: unixTime))
            }
        case .malformed(let packet):
            _counters.malformedPackets += 1
            // H4 event payload: code 0x3E, length, subevent 0x02 or 0x0D.
            let p = packet.payload
            if packet.type == .event, p.count >= 3, p[0] == HCIEventCode.leMeta.rawValue,
                p[2] == LEMetaSubevent.advertisingReport.rawValue
                    || p[2] == LEMetaSubevent.extendedAdvertisingReport.rawValue
            {
                _counters.malformedAdvertisingEvents += 1
            }
        default:
            break
        }
    }

    /// Scanning stopped: fragments of old chains must not join new ones.
    public mutating func reset() { reassembler.reset() }
}
