import BLEConfiguration
import BLEESPHome
import BLETransport
import Logging

/// The ESPHome proxy as one of the gateway's parts (docs/ESPHOME.md): built from `esphome_api:`, run beside MQTT,
/// fed from `observe` and told the controller's address by `adapterChanged`.
extension GatewayRuntime {
    static func makeESPHomeProxy(
        _ configuration: GatewayConfiguration, clock: any BLEClock, logger: Logger
    ) -> ESPHomeProxy? {
        let e = configuration.esphomeAPI
        guard e.enabled else { return nil }
        var c = ESPHomeProxyConfiguration(
            name: e.name ?? configuration.gateway.id, psk: e.key, port: e.port)
        c.host = e.host
        return ESPHomeProxy(configuration: c, version: version, clock: clock, logger: logger)
    }

    /// Serves until the gateway stops; a port that cannot be bound is logged, and the rest of the gateway goes on.
    func runESPHomeProxy(_ proxy: ESPHomeProxy) async {
        do {
            try await proxy.run()
        } catch is CancellationError {
        } catch {
            logger.error("esphome_api: \(error); Home Assistant cannot connect to this gateway's proxy")
        }
    }
}
