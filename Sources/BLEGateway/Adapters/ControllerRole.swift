import BLEHCI
import BLEHost

/// What runs on the controller beside the scanner while an adapter session is up: the peripheral connections.
///
/// The adapter's owner (the supervisor in exclusive mode) starts `serve` once the controller is brought up and
/// cancels it when the session ends — a reset, a power cycle, an unplug — and starts it afresh on the next
/// session, so every link is re-established by the same code that made it first.
public protocol ControllerRole: Sendable {
    /// Runs until cancelled or until the controller's transport ends.
    func serve(controller: HCIController, info: ControllerInfo) async
    /// Shared mode: the kernel owns the controller and L2CAP, so the role works through the kernel's sockets on
    /// `adapter` ("hci0") instead; runs until cancelled (when the shared-mode session ends).
    func serve(kernelAdapter adapter: String) async
    /// Two adapters: the role is about to move to the other controller (its `serve` here is cancelled next). Ends
    /// the links on this one itself, so the peripherals advertise again for the other; bounded.
    func handOver() async
}
