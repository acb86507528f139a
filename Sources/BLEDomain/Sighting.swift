import BLEHCI
import BLETransport

/// One advertisement or scan response heard from one device, decoded: what the ranging, region and
/// publishing layers consume.
public struct Sighting: Sendable {
    public var address: BDAddress
    public var addressType: LEAddressType
    /// dBm; nil when the controller reported 127 ("not available"), which never becomes a number.
    public var rssi: Int8?
    /// dBm: the extended report's TX power if present, else the advertised TX Power Level (0x0A).
    public var txPower: Int8?
    /// Unix seconds, from the injected clock (`BLEClock.unixTime()`), passed in by the caller.
    public var timestamp: Double
    public var isConnectable: Bool
    public var isScanResponse: Bool
    public var advertisement: Advertisement

    @inlinable public init(
        address: BDAddress, addressType: LEAddressType, rssi: Int8?, txPower: Int8?, timestamp: Double,
        isConnectable: Bool, isScanResponse: Bool, advertisement: Advertisement
    ) {
        self.address = address
        self.addressType = addressType
        // HCI's 127 means "RSSI is not available" (Vol 4, Part E, §7.7.65.2): never a reading.
        self.rssi = rssi == 127 ? nil : rssi
        self.txPower = txPower
        self.timestamp = timestamp
        self.isConnectable = isConnectable
        self.isScanResponse = isScanResponse
        self.advertisement = advertisement
    }

    /// Decodes a controller report. `timestamp` comes from the caller's clock so that tests and the
    /// simulator control time.
    @inlinable public init(report: LEAdvertisingReport, timestamp: Double) {
        let ad = Advertisement(decoding: report.data)
        self.init(
            address: report.address, addressType: report.addressType,
            rssi: report.rssi, txPower: report.txPower ?? ad.txPowerLevel,
            timestamp: timestamp, isConnectable: report.isConnectable, isScanResponse: report.isScanResponse,
            advertisement: ad)
    }

    @inlinable public var beacon: Beacon? { advertisement.beacon }

    /// The stable identity (beacon id or address).
    @inlinable public var identity: BeaconIdentity { BeaconIdentity(beacon: advertisement.beacon, address: address) }
}
