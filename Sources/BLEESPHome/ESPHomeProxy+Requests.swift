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
        let request: ESPHomeRequest
        do {
            request = try ESPHomeRequest(type, message)
        } catch {
            books.withLock { $0.statistics.protocolErrors += 1 }
            logger.warning("esphome_api: client \(client.id) sent a \(type) that does not decode: \(error)")
            return false
        }
        switch request {
        case .hello(let info, let major, let minor):
            logger.info("esphome_api: client \(client.id) is \(info) (API \(major).\(minor))")
            var r = ESPHome_HelloResponse()
            r.apiVersionMajor = Self.apiVersion.major
            r.apiVersionMinor = Self.apiVersion.minor
            r.serverInfo = "blegateway \(version)"
            r.name = configuration.name
            reply(r, .helloResponse, client)
        case .connect:
            reply(ESPHome_ConnectResponse(), .connectResponse, client)
        case .deviceInfo:
            reply(deviceInfo(), .deviceInfoResponse, client)
        case .listEntities:
            reply(ESPHome_ListEntitiesDoneResponse(), .listEntitiesDoneResponse, client)
        case .subscribeNothingToSend, .pingResponse, .getTimeResponse:
            break
        case .ping:
            reply(ESPHome_PingResponse(), .pingResponse, client)
        case .disconnect:
            reply(ESPHome_DisconnectResponse(), .disconnectResponse, client)
            return false
        case .disconnectResponse:
            return false
        case .subscribeAdvertisements(let flags):
            subscribe(client, raw: flags.contains(.rawAdvertisements))
        case .unsubscribeAdvertisements:
            books.withLock { if $0.subscriber?.id == client.id { $0.subscriber = nil } }
        case .subscribeConnectionsFree:
            // No connection slots are offered (`features`): none free, none in all.
            reply(ESPHome_BluetoothConnectionsFreeResponse(), .bluetoothConnectionsFreeResponse, client)
        case .unknown(let type):
            books.withLock { $0.statistics.unknownMessages += 1 }
            logger.notice("esphome_api: client \(client.id) sent \(type), which this proxy does not serve")
        }
        return true
    }

    private func reply(_ m: some SwiftProtobuf.Message, _ type: ESPHomeMessageType, _ client: Client) {
        // Encoding a message built here cannot fail (no required fields in proto3).
        client.send(type, (try? m.serializedBytes()) ?? [])
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
        if taken {
            logger.warning("esphome_api: client \(client.id) refused: another client takes the advertisements")
        } else {
            logger.info("esphome_api: client \(client.id) takes the raw advertisements")
        }
    }
}
