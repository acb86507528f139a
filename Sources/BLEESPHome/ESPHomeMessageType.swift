/// The `(id)` option of each message in ESPHome's api.proto: the number a frame carries before the message's bytes.
/// Open, like the HCI codes: a number nobody here names is still a value (and is answered as unknown).
public struct ESPHomeMessageType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let helloRequest = Self(rawValue: 1)
    public static let helloResponse = Self(rawValue: 2)
    public static let connectRequest = Self(rawValue: 3)
    public static let connectResponse = Self(rawValue: 4)
    public static let disconnectRequest = Self(rawValue: 5)
    public static let disconnectResponse = Self(rawValue: 6)
    public static let pingRequest = Self(rawValue: 7)
    public static let pingResponse = Self(rawValue: 8)
    public static let deviceInfoRequest = Self(rawValue: 9)
    public static let deviceInfoResponse = Self(rawValue: 10)
    public static let listEntitiesRequest = Self(rawValue: 11)
    public static let listEntitiesDoneResponse = Self(rawValue: 19)
    public static let subscribeStatesRequest = Self(rawValue: 20)
    public static let subscribeHomeassistantServicesRequest = Self(rawValue: 34)
    public static let getTimeRequest = Self(rawValue: 36)
    public static let getTimeResponse = Self(rawValue: 37)
    public static let subscribeHomeAssistantStatesRequest = Self(rawValue: 38)
    public static let subscribeBluetoothLEAdvertisementsRequest = Self(rawValue: 66)
    public static let bluetoothDeviceRequest = Self(rawValue: 68)
    public static let bluetoothDeviceConnectionResponse = Self(rawValue: 69)
    public static let subscribeBluetoothConnectionsFreeRequest = Self(rawValue: 80)
    public static let bluetoothConnectionsFreeResponse = Self(rawValue: 81)
    public static let unsubscribeBluetoothLEAdvertisementsRequest = Self(rawValue: 87)
    public static let bluetoothLERawAdvertisementsResponse = Self(rawValue: 93)

    static let names: [UInt16: String] = [
        1: "HelloRequest", 2: "HelloResponse", 3: "ConnectRequest", 4: "ConnectResponse", 5: "DisconnectRequest",
        6: "DisconnectResponse", 7: "PingRequest", 8: "PingResponse", 9: "DeviceInfoRequest", 10: "DeviceInfoResponse",
        11: "ListEntitiesRequest", 19: "ListEntitiesDoneResponse", 20: "SubscribeStatesRequest",
        34: "SubscribeHomeassistantServicesRequest", 36: "GetTimeRequest", 37: "GetTimeResponse",
        38: "SubscribeHomeAssistantStatesRequest", 66: "SubscribeBluetoothLEAdvertisementsRequest",
        68: "BluetoothDeviceRequest", 69: "BluetoothDeviceConnectionResponse",
        80: "SubscribeBluetoothConnectionsFreeRequest", 81: "BluetoothConnectionsFreeResponse",
        87: "UnsubscribeBluetoothLEAdvertisementsRequest", 93: "BluetoothLERawAdvertisementsResponse",
    ]

    public var description: String { Self.names[rawValue].map { "\($0) (\(rawValue))" } ?? "message \(rawValue)" }
}

/// `BluetoothProxyFeature` in aioesphomeapi's model (the bits of DeviceInfo's `bluetooth_proxy_feature_flags`).
public struct BluetoothProxyFeatures: OptionSet, Sendable {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let passiveScan = Self(rawValue: 1 << 0)
    public static let activeConnections = Self(rawValue: 1 << 1)
    public static let remoteCaching = Self(rawValue: 1 << 2)
    public static let pairing = Self(rawValue: 1 << 3)
    public static let cacheClearing = Self(rawValue: 1 << 4)
    public static let rawAdvertisements = Self(rawValue: 1 << 5)
}

/// `BluetoothProxySubscriptionFlag` (SubscribeBluetoothLEAdvertisementsRequest's `flags`).
public struct BluetoothProxySubscriptionFlags: OptionSet, Sendable {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let rawAdvertisements = Self(rawValue: 1 << 0)
}
