import BLETransport

/// The SMP channel (CID 0x0006) of a host that does not pair: the gateway reads public sensor data and holds no
/// keys. A state machine with no I/O.
///
/// - Pairing Request (0x01) or Security Request (0x0B): Pairing Failed (§3.5.5: Code 0x05, Reason (1)) with reason
///   0x05 Pairing Not Supported, the answer of a device that does not pair.
/// - Anything else (a reserved code, or a pairing command outside a pairing we never start): ignored, counted.
public struct SMPResponder: Sendable {
    public struct Counters: Sendable, Hashable {
        /// Pairing or Security Requests refused.
        public var refused = 0
        public var ignored = 0
        public init() {}
    }

    public private(set) var counters = Counters()

    public init() {}

    /// Returns the SMP command to send back, if any.
    public mutating func receive(_ payload: [UInt8]) -> [UInt8]? {
        guard let raw = payload.first else {
            counters.ignored += 1
            return nil
        }
        switch SMPCode(rawValue: raw) {
        case .pairingRequest, .securityRequest:
            counters.refused += 1
            return [SMPCode.pairingFailed.rawValue, SMPFailureReason.pairingNotSupported.rawValue]
        default:
            counters.ignored += 1
            return nil
        }
    }
}
