import BLEDomain
import BLEHost

// Here, where the sources turn the host's reports into sightings, so that the domain needs nothing of the host.
extension Sighting {
    /// Decodes a report the host's scanner delivered (its data already reassembled and owned).
    @inlinable public init(scanReport r: ScanReport) {
        let ad = Advertisement(decoding: r.data[...])
        self.init(
            address: r.address, addressType: r.addressType, rssi: r.rssi, txPower: r.txPower ?? ad.txPowerLevel,
            timestamp: r.unixTime, isConnectable: r.isConnectable, isScanResponse: r.isScanResponse,
            advertisement: ad)
    }
}
