import BLEHCI
import BLEHost
import BLETransport
import Logging

/// How `PeripheralService` makes and ends links: the controller's HCI commands in exclusive mode
/// (`HCILinkMaker`), kernel L2CAP sockets in shared mode (`KernelLinkMaker`). The policy (which peer, when,
/// backoff, timeouts) stays in `ConnectionManager`, the GATT work in the service, over `any ATTBearer`: a maker
/// only carries out the manager's link actions and reports what came of them through the `post` it was given.
protocol PeripheralLinkMaker: AnyObject, Sendable {
    /// The maker's own I/O (events from the controller, link ends) until the session ends: the link layer's
    /// end, or cancellation by the service.
    func run() async
    /// Starts an attempt; its outcome comes back as `.createStatus`/`.connectionComplete` or `.connectionFailed`.
    func connect(_ peer: ConnectionManager.Peer, parameters: LEConnectionParameters) async
    /// Cancels the attempt in flight, if there still is one.
    func cancelConnect() async
    /// Ends a link; its end comes back as `.disconnectionComplete` or `.linkEnded`.
    func disconnect(_ handle: UInt16, reason: HCIStatus) async
    /// The link's ATT bearer, once per link (`.linkUp`); nil when the link is already gone.
    func bearer(for handle: UInt16) -> (any ATTBearer)?
    /// Whether `rssi(of:)` can answer: HCI Read RSSI needs the controller, which shared mode does not have.
    var readsRSSI: Bool { get }
    /// ATT PDUs the bearers dropped because their GATT client fell behind (for the health topic).
    var droppedPDUs: Int { get }
    func rssi(of handle: UInt16) async -> Int8?
}

/// Exclusive mode: the gateway's own host stack on the controller of the current adapter session.
extension PeripheralLinkMaker {
    var droppedPDUs: Int { 0 }
}

final class HCILinkMaker: PeripheralLinkMaker, @unchecked Sendable {
    let controller: HCIController
    let info: ControllerInfo
    let links: LELinks
    /// Scanning uses the extended commands, so connecting must too (Core v5.4, Vol 4, Part E, §3.1.1).
    let extended: Bool
    let post: @Sendable (ConnectionManager.Event) -> Void
    private let events: StageQueue<HCIControllerEvent>

    init(
        controller: HCIController, info: ControllerInfo, clock: any BLEClock, logger: Logger,
        post: @escaping @Sendable (ConnectionManager.Event) -> Void
    ) {
        self.controller = controller
        self.info = info
        self.links = LELinks(controller: controller, buffers: info.leACLBuffers, clock: clock, logger: logger)
        self.extended = info.supportsExtendedAdvertising
        self.post = post
        // Subscribed now, before the first command can be sent.
        self.events = controller.events()
    }

    var droppedPDUs: Int { links.statistics.attPDUsDropped }
    var readsRSSI: Bool { true }

    func run() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [links] in await links.run() }
            group.addTask { [self] in
                for await e in events.ignoringErrors {
                    switch e {
                    case .event(.leConnectionComplete(let c)) where c.role == 0:
                        post(.connectionComplete(status: c.status, handle: c.handle, peer: c.peerAddress))
                    case .event(.disconnectionComplete(let d)) where d.status.isSuccess:
                        post(.disconnectionComplete(handle: d.handle, reason: d.reason))
                    case .transportEnded:
                        return
                    default:
                        continue
                    }
                }
            }
            // The transport's end ends the session (cancellation ends both).
            await group.next()
            group.cancelAll()
        }
    }

    func connect(_ peer: ConnectionManager.Peer, parameters: LEConnectionParameters) async {
        let status: HCIStatus
        do {
            if extended {
                try await controller.execute(
                    LEExtendedCreateConnectionCommand(
                        peerAddressType: peer.addressType, peerAddress: peer.address, connection: parameters))
            } else {
                try await controller.execute(
                    LECreateConnectionCommand(
                        peerAddressType: peer.addressType, peerAddress: peer.address, connection: parameters))
            }
            status = .success
        } catch let e as HCIError {
            status = e.status ?? .unspecifiedError
        } catch {
            return
        }
        post(.createStatus(status))
    }

    func cancelConnect() async {
        // Command Disallowed when nothing is initiating any more: the Connection Complete crossed our Cancel.
        _ = try? await controller.execute(LECreateConnectionCancelCommand())
    }

    func disconnect(_ handle: UInt16, reason: HCIStatus) async {
        do {
            try await controller.execute(DisconnectCommand(handle: handle, reason: reason))
        } catch let e as HCIError {
            if let status = e.status { post(.disconnectStatus(handle: handle, status)) }
        } catch {}
    }

    func bearer(for handle: UInt16) -> (any ATTBearer)? { links.bearer(for: handle) }

    func rssi(of handle: UInt16) async -> Int8? {
        // 127: "RSSI is not available" (Vol 4, Part E, §7.5.4).
        guard let r = try? await controller.execute(ReadRSSICommand(handle: handle)), r.rssi != 127 else { return nil }
        return r.rssi
    }
}
