import BLEConfiguration
import BLEGateway
import BLETransport
import Logging

/// The sighting source for a configuration: its device (or two), opened in its mode, supervised with the
/// configured recovery ladder. `role` runs beside the scanner (the peripheral links).
func makeSightingSource(
    _ c: GatewayConfiguration, capture: CaptureArguments?, clock: any BLEClock, logger: Logger,
    role: (any ControllerRole)? = nil
) throws -> any SightingSource {
    let spec = try DeviceSpec(parsing: c.adapter.device)
    let mode = c.adapter.mode
    var options = TransportOptions()
    capture?.apply(to: &options)
    options.adapterAddress = c.adapter.address
    if let second = c.adapter.secondDevice {
        var secondOptions = TransportOptions()
        // One capture file per adapter: the second's beside the first's.
        if let capture, let path = capture.capture { capture.apply(to: &secondOptions, path: "\(path).secondary") }
        secondOptions.adapterAddress = c.adapter.secondAddress
        return DualAdapterSource(
            primary: spec, secondary: try DeviceSpec(parsing: second),
            options: [.primary: options, .secondary: secondOptions], scan: c.scan, clock: clock, logger: logger,
            lifecycle: c.adapter.lifecycle, role: role, handback: .milliseconds(Int64(c.adapter.handbackSeconds * 1000))
        )
    }
    return HCISightingSource(
        spec: spec, mode: mode, options: options, scan: c.scan, clock: clock, logger: logger,
        lifecycle: c.adapter.lifecycle, role: role)
}
