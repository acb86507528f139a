import BLEGateway
import BLETransport
import Logging

/// The sighting source for a configuration: its device, opened in its mode.
/// `role` runs on the controller beside the scanner in exclusive mode (the peripheral links).
func makeSightingSource(_ c: GatewayConfiguration, capture: String?, clock: any BLEClock, logger: Logger,
                        role: (any ControllerRole)? = nil) throws -> any SightingSource {
    let spec = try DeviceSpec(parsing: c.adapter.device)
    let mode: AdapterMode = c.adapter.mode == "shared" ? .shared : .exclusive
    var options = TransportOptions()
    options.capturePath = capture
    return HCISightingSource(spec: spec, mode: mode, options: options, scan: c.scan, clock: clock, logger: logger,
                             role: role)
}
