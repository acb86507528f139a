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

    /// Answers one message, and says how the client's connection goes on: it ends when the client said goodbye or
    /// sent bytes that do not decode as the message its type names, and is cut when its replies pile up unread.
    func respond(to type: ESPHomeMessageType, _ message: [UInt8], client: Client) -> Client.Next {
        let request: ESPHomeRequest
        do {
            request = try ESPHomeRequest(type, message)
        } catch {
            books.withLock { $0.statistics.protocolErrors += 1 }
            logger.warning("esphome_api: client \(client.id) sent a \(type) that does not decode: \(error)")
            return .close
        }
        var replied = true
        func reply(_ m: some SwiftProtobuf.Message, _ type: ESPHomeMessageType) {
            // Encoding a message built here cannot fail (no required fields in proto3).
            replied = client.send(type, (try? m.serializedBytes()) ?? []) && replied
        }
        defer {
            if !replied {
                books.withLock { $0.statistics.stalledClients += 1 }
                logger.warning(
                    "esphome_api: client \(client.id) closed: \(client.outbox.replyLimit) replies wait unread")
            }
        }
        switch request {
        case .hello(let info, let major, let minor):
            logger.info("esphome_api: client \(client.id) is \(info) (API \(major).\(minor))")
            var r = ESPHome_HelloResponse()
            r.apiVersionMajor = Self.apiVersion.major
            r.apiVersionMinor = Self.apiVersion.minor
            r.serverInfo = "blegateway \(version)"
            r.name = configuration.name
            reply(r, .helloResponse)
        case .connect:
            reply(ESPHome_ConnectResponse(), .connectResponse)
        case .deviceInfo:
            reply(deviceInfo(), .deviceInfoResponse)
        case .listEntities:
            reply(ESPHome_ListEntitiesDoneResponse(), .listEntitiesDoneResponse)
        case .subscribeNothingToSend, .pingResponse, .getTimeResponse:
            break
        case .ping:
            reply(ESPHome_PingResponse(), .pingResponse)
        case .disconnect:
            reply(ESPHome_DisconnectResponse(), .disconnectResponse)
            return replied ? .close : .cut
        case .disconnectResponse:
            return .close
        case .subscribeAdvertisements(let flags):
            subscribe(client, raw: flags.contains(.rawAdvertisements))
        case .unsubscribeAdvertisements:
            books.withLock { if $0.subscriber?.id == client.id { $0.subscriber = nil } }
        case .subscribeConnectionsFree:
            // No connection slots are offered (`features`): none free, none in all.
            reply(ESPHome_BluetoothConnectionsFreeResponse(), .bluetoothConnectionsFreeResponse)
        case .unknown(let type):
            books.withLock { $0.statistics.unknownMessages += 1 }
            logger.notice("esphome_api: client \(client.id) sent \(type), which this proxy does not serve")
        }
        return replied ? .read : .cut
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
            books.withLock { $0.statistics.parsedSubscriptionsRefused += 1 }
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
