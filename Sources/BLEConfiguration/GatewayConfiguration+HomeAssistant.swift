import BLEHCI

extension GatewayConfiguration {
    /// Home Assistant MQTT discovery (`homeassistant:`, docs/HOMEASSISTANT.md). Settable remotely, applied live.
    public struct HomeAssistant: Sendable, Equatable {
        public init() {}

        public var enabled = false
        /// Home Assistant's `discovery_prefix` (its MQTT integration's option; `homeassistant` unless changed there):
        /// `/`-separated levels of `[A-Za-z0-9._-]`, so never a wildcard.
        public var discoveryPrefix = "homeassistant"
        /// At most this many devices are announced (the gateway counts as one); the rest are counted, not announced.
        public var maxDevices = 100
        /// Broadcasting sensors the gateway decodes (docs/SENSORS.md) are announced once heard, one entity per quantity.
        public var sensors = true
        /// How writable characteristics appear (button, switch or number); a writable characteristic without one
        /// appears only when its type is known (Alert Level, 2A06, as a number 0…2).
        public var controls: [Control] = []

        /// The entity that writes one characteristic.
        public struct Control: Sendable, Equatable {
            public enum Kind: String, Sendable, CaseIterable {
                case button, `switch`, number
            }

            public var characteristic: BluetoothUUID
            public var service: BluetoothUUID?
            public var kind: Kind
            /// The bytes a button press writes (hex).
            public var press: [UInt8] = []
            /// The bytes a switch writes when turned on and off (hex).
            public var on: [UInt8] = []
            public var off: [UInt8] = []
            /// A number's range; written as one unsigned byte up to 255, two (little-endian) above.
            public var min = 0
            public var max = 255

            public init(characteristic: BluetoothUUID, service: BluetoothUUID? = nil, kind: Kind) {
                self.characteristic = characteristic
                self.service = service
                self.kind = kind
            }
        }

        /// Why a discovery prefix cannot be one (nil when it can): Home Assistant subscribes to `<prefix>/#`, so a
        /// wildcard, an empty level or anything outside `[A-Za-z0-9._-]` would announce into topics nobody reads.
        public static func problem(withPrefix prefix: String) -> String? {
            for level in prefix.split(separator: "/", omittingEmptySubsequences: false) {
                if level.isEmpty { return "an empty topic level" }
                if level.utf8.count > 64 { return "a level longer than 64 characters" }
                for b in level.utf8
                where
                    !(b.isASCIIAlphanumeric || b == UInt8(ascii: "-") || b == UInt8(ascii: "_")
                    || b == UInt8(ascii: "."))
                {
                    if b == UInt8(ascii: "+") || b == UInt8(ascii: "#") {
                        return "MQTT wildcards (+, #) are not allowed"
                    }
                    return "only letters, digits, '-', '_' and '.' are allowed in a level"
                }
            }
            return nil
        }
    }
}

extension UInt8 {
    package var isASCIIAlphanumeric: Bool {
        (self >= 0x30 && self <= 0x39) || (self >= 0x41 && self <= 0x5A) || (self >= 0x61 && self <= 0x7A)
    }
}
