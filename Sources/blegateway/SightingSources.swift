import BLEGateway
import BLETransport
import Logging

/// The sighting source for a configuration: its device, opened in its mode.
func makeSightingSource(_ c: GatewayConfiguration, capture: String?, clock: any BLEClock,
                        logger: Logger) throws -> any SightingSource {
    let spec = try DeviceSpec(parsing: c.adapter.device)
    let mode: AdapterMode = c.adapter.mode == "shared" ? .shared : .exclusive
    return HCISightingSource(spec: spec, mode: mode, capture: capture, scan: c.scan, clock: clock, logger: logger)
}
