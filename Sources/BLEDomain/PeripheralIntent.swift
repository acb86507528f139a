import BLEHCI
import BLETransport

/// A peripheral the gateway keeps connected (config `peripherals:`), and what it does on the link.
///
/// CoreBluetooth's "waiting connection" without its limits: the intent stands until configuration removes it,
/// across adapter resets, unplugs and restarts of the gateway.
public struct PeripheralIntent: Sendable, Equatable {
    /// Which devices the intent takes: one address, or every device whose advertised name starts with a prefix,
    /// or every device advertising a service.
    public enum Match: Sendable, Hashable {
        case address(BDAddress)
        case namePrefix(String)
        case service(BluetoothUUID)
    }

    /// A characteristic named by its UUID, optionally within a service (the first match otherwise).
    public struct CharacteristicRef: Sendable, Hashable, CustomStringConvertible {
        public var service: BluetoothUUID?
        public var characteristic: BluetoothUUID
        public init(service: BluetoothUUID? = nil, characteristic: BluetoothUUID) {
            self.service = service
            self.characteristic = characteristic
        }
        public var description: String {
            service.map { "\($0.shortDescription)/\(characteristic.shortDescription)" }
                ?? characteristic.shortDescription
        }
    }

    public struct Subscription: Sendable, Hashable {
        public var characteristic: CharacteristicRef
        /// Indications (acknowledged) instead of notifications; nil: notifications when the characteristic has
        /// them, indications otherwise.
        public var indicate: Bool?
        public init(characteristic: CharacteristicRef, indicate: Bool? = nil) {
            self.characteristic = characteristic
            self.indicate = indicate
        }
    }

    public struct PeriodicRead: Sendable, Hashable {
        public var characteristic: CharacteristicRef
        /// Seconds between reads; 0: once per connection.
        public var intervalSeconds: Double
        public init(characteristic: CharacteristicRef, intervalSeconds: Double = 0) {
            self.characteristic = characteristic
            self.intervalSeconds = intervalSeconds
        }
    }

    public var match: Match
    /// A label for logs and payloads.
    public var name: String?
    /// For an address match: public or random. Nil: learned from the advertisement.
    public var addressType: LEAddressType?
    public var subscribe: [Subscription] = []
    public var read: [PeriodicRead] = []
    /// Characteristics that may be written through the command topic; every other write is refused.
    public var writable: [CharacteristicRef] = []

    public init(match: Match, name: String? = nil, addressType: LEAddressType? = nil) {
        self.match = match
        self.name = name
        self.addressType = addressType
    }

    /// Whether a sighting is of a device this intent takes. Names and services are read from advertising data
    /// and scan responses alike; whether the device accepts connections is the caller's question.
    public func matches(_ s: Sighting) -> Bool {
        switch match {
        case .address(let a):
            return s.address == a
        case .namePrefix(let prefix):
            guard let name = s.advertisement.nameBytes else { return false }
            return name.starts(with: prefix.utf8)
        case .service(let uuid):
            return s.advertisement.serviceUUIDs.contains(uuid)
        }
    }

    /// Whether a write to this characteristic is allowed.
    public func allowsWrite(service: BluetoothUUID?, characteristic: BluetoothUUID) -> Bool {
        writable.contains { w in
            w.characteristic == characteristic && (w.service == nil || service == nil || w.service == service)
        }
    }
}

extension BluetoothUUID {
    /// "2a6e" for a 16-bit alias, the lowercase 36-character form otherwise: how topics and payloads name it.
    public var shortDescription: String {
        if let u = uuid16 {
            let s = String(u, radix: 16)
            return String(repeating: "0", count: 4 - s.count) + s
        }
        return description.lowercased()
    }
}
