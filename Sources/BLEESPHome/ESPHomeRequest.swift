import Foundation

/// A client's message, decoded: the ones the proxy answers, each with what it carries, and everything else by its
/// number. Pure, so the fuzzer reaches it without a socket.
public enum ESPHomeRequest: Sendable, Equatable {
    case hello(clientInfo: String, apiMajor: UInt32, apiMinor: UInt32)
    case connect
    case deviceInfo
    case listEntities
    /// Entity states, Home Assistant services and Home Assistant states: answered with nothing by a device that has
    /// no entities.
    case subscribeNothingToSend
    case ping
    case pingResponse
    case getTimeResponse
    case disconnect
    case disconnectResponse
    case subscribeAdvertisements(BluetoothProxySubscriptionFlags)
    case unsubscribeAdvertisements
    case subscribeConnectionsFree
    case unknown(ESPHomeMessageType)

    /// Throws protobuf's decoding error when the bytes are not the message their type names.
    public init(_ type: ESPHomeMessageType, _ message: [UInt8]) throws {
        switch type {
        case .helloRequest:
            let m = try ESPHome_HelloRequest(serializedBytes: message)
            self = .hello(clientInfo: m.clientInfo, apiMajor: m.apiVersionMajor, apiMinor: m.apiVersionMinor)
        case .connectRequest:
            // The password field is read and ignored: the key, or without one the network, is the only gate.
            _ = try ESPHome_ConnectRequest(serializedBytes: message)
            self = .connect
        case .deviceInfoRequest: self = .deviceInfo
        case .listEntitiesRequest: self = .listEntities
        case .subscribeStatesRequest, .subscribeHomeassistantServicesRequest, .subscribeHomeAssistantStatesRequest:
            self = .subscribeNothingToSend
        case .pingRequest: self = .ping
        case .pingResponse: self = .pingResponse
        case .getTimeResponse:
            _ = try ESPHome_GetTimeResponse(serializedBytes: message)
            self = .getTimeResponse
        case .disconnectRequest: self = .disconnect
        case .disconnectResponse: self = .disconnectResponse
        case .subscribeBluetoothLEAdvertisementsRequest:
            let m = try ESPHome_SubscribeBluetoothLEAdvertisementsRequest(serializedBytes: message)
            self = .subscribeAdvertisements(BluetoothProxySubscriptionFlags(rawValue: UInt32(bitPattern: m.flags)))
        case .unsubscribeBluetoothLEAdvertisementsRequest: self = .unsubscribeAdvertisements
        case .subscribeBluetoothConnectionsFreeRequest: self = .subscribeConnectionsFree
        default: self = .unknown(type)
        }
    }
}
