import Foundation
import SwiftProtobuf

/// What each message a client sends gets, as ESPHome's API server answers it (esphome/components/api). Requests for
/// entities, states and Home Assistant services are answered as a device with no entities would answer them.
extension ESPHomeProxy {
    /// The API version ESPHome 2025.4 speaks, which aioesphomeapi 29 (Home Assistant 2025.4) expects.
    static let apiVersion = (major: UInt32(1), minor: UInt32(10))
    /// The ESPHome release whose API this is: Home Assistant reads `esphome_version` to know what a device can do.
    static let esphomeVersion = "2025.4.0"

    /// What the proxy offers Home Assistant's Bluetooth stack today: it scans passively and forwards raw
    /// advertisements. Active connections (GATT through our links) are not offered yet, so none is asked for.
    static let features: BluetoothProxyFeatures = [.passiveScan, .rawAdvertisements]

    /// Answers one message; false when the connection is to end (the client said goodbye, or sent bytes that do not
    /// decode as the message its type names).
    func respond(to type: ESPHomeMessageType, _ message: [UInt8], client: Client) -> Bool {
        do {
            switch type {
            case .helloRequest:
                let hello = try ESPHome_HelloRequest(serializedBytes: message)
                logger.info(
                    "esphome_api: client \(client.id) is \(hello.clientInfo) (API \(hello.apiVersionMajor).\(hello.apiVersionMinor))"
                )
                var r = ESPHome_HelloResponse()
                r.apiVersionMajor = Self.apiVersion.major
                r.apiVersionMinor = Self.apiVersion.minor
                r.serverInfo = "blegateway \(version)"
                r.name = configuration.name
                try reply(r, .helloResponse, client)
            case .connectRequest:
                // No password: the key (or, without one, the network) is the only gate, as in ESPHome since 2022.
                try reply(ESPHome_ConnectResponse(), .connectResponse, client)
            case .deviceInfoRequest:
                try reply(deviceInfo(), .deviceInfoResponse, client)
            case .listEntitiesRequest:
                try reply(ESPHome_ListEntitiesDoneResponse(), .listEntitiesDoneResponse, client)
            case .subscribeStatesRequest, .subscribeHomeassistantServicesRequest, .subscribeHomeAssistantStatesRequest:
                break
            case .pingRequest:
                try reply(ESPHome_PingResponse(), .pingResponse, client)
            case .pingResponse, .getTimeResponse:
                break
            case .disconnectRequest:
                try reply(ESPHome_DisconnectResponse(), .disconnectResponse, client)
                return false
            case .disconnectResponse:
                return false
            case .subscribeBluetoothLEAdvertisementsRequest:
                let request = try ESPHome_SubscribeBluetoothLEAdvertisementsRequest(serializedBytes: message)
                subscribe(
                    client,
                    raw: BluetoothProxySubscriptionFlags(rawValue: UInt32(bitPattern: request.flags)).contains(
                        .rawAdvertisements))
            case .unsubscribeBluetoothLEAdvertisementsRequest:
                books.withLock { if $0.subscriber?.id == client.id { $0.subscriber = nil } }
            case .subscribeBluetoothConnectionsFreeRequest:
                // No connection slots are offered (`features`): none free, none in all.
                try reply(ESPHome_BluetoothConnectionsFreeResponse(), .bluetoothConnectionsFreeResponse, client)
            default:
                books.withLock { $0.statistics.unknownMessages += 1 }
                logger.notice("esphome_api: client \(client.id) sent \(type), which this proxy does not serve")
            }
            return true
        } catch {
            books.withLock { $0.statistics.protocolErrors += 1 }
            logger.warning("esphome_api: client \(client.id) sent a \(type) that does not decode: \(error)")
            return false
        }
    }

    private func reply(_ m: some SwiftProtobuf.Message, _ type: ESPHomeMessageType, _ client: Client) throws {
        client.send(type, try m.serializedBytes())
    }

    func deviceInfo() -> ESPHome_DeviceInfoResponse {
        var r = ESPHome_DeviceInfoResponse()
        r.name = configuration.name
        r.friendlyName = configuration.friendlyName
        let mac = books.withLock { $0.mac }
        r.macAddress = mac
        r.bluetoothMacAddress = mac
        r.esphomeVersion = Self.esphomeVersion
        r.manufacturer = "BLEGateway"
        r.model = "Linux"
        r.projectName = "blegateway.gateway"
        r.projectVersion = version
        r.bluetoothProxyFeatureFlags = Self.features.rawValue
        return r
    }

    /// ESPHome serves one advertisement subscriber: a second is refused (and counted) while the first holds it.
    private func subscribe(_ client: Client, raw: Bool) {
        guard raw else {
            books.withLock { $0.statistics.subscriptionsRefused += 1 }
            logger.warning(
                "esphome_api: client \(client.id) asked for parsed advertisements; this proxy sends raw ones only")
            return
        }
        let taken = books.withLock { b -> Bool in
            if let s = b.subscriber, s.id != client.id {
                b.statistics.subscriptionsRefused += 1
                return true
            }
            b.subscriber = (client.id, client.outbox)
            return false
        }
        if taken { logger.warning("esphome_api: client \(client.id) refused: another client takes the advertisements") }
    }
}
