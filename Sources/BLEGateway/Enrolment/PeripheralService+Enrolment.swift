import BLEHost

/// Enrolment on the controller session the peripheral links have: the one session every consumer of the controller
/// shares.
extension PeripheralService {
    /// Enrols a phone on the controller session now up, beside the scanning and the links: in exclusive mode the
    /// session's own links take the pairing (`Enrolment`); in shared mode the kernel pairs, bluetoothd's agent asks
    /// the user, and the key is read as the kernel announces it (`SharedEnrolment`). Refused while no session is up.
    public func enrol(
        _ enrolment: Enrolment, confirm: @escaping @Sendable (UInt32) async -> Bool,
        progress: @escaping @Sendable (Enrolment.Progress) -> Void
    ) async throws -> SMPPairingResponder.PeerIdentity {
        switch books.withLock({ $0.session?.maker }) {
        case let maker as HCILinkMaker:
            return try await enrolment.run(
                controller: maker.controller, links: maker.links, info: maker.info, confirm: confirm,
                progress: progress)
        case let maker as KernelLinkMaker:
            // The kernel pairs and bluetoothd's agent confirms: `confirm` is never asked.
            return try await SharedEnrolment(
                adapter: maker.adapter, options: enrolment.options, clock: enrolment.clock, logger: enrolment.logger
            ).run(progress: progress)
        default:
            throw Enrolment.Failed(reason: .unavailable("no adapter session is up (the adapter is down or recovering)"))
        }
    }
}
