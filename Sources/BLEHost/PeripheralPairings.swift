import BLEHCI
import BLETransport

/// What enrolment hears of the pairings on links where this host is the peripheral.
public enum PairingEvent: Sendable, Hashable {
    /// A central connected to us; a pairing may follow.
    case connected(handle: UInt16, peer: SMPPairingResponder.Party)
    /// Numeric Comparison: show these six digits and answer with `LELinks.confirmPairing`.
    case compare(handle: UInt16, digits: UInt32)
    /// Passkey Entry: show this passkey for the phone's user to type.
    case passkey(handle: UInt16, UInt32)
    case paired(handle: UInt16, SMPPairingResponder.PeerIdentity)
    case failed(handle: UInt16, SMPPairingResponder.Failure)
    case disconnected(handle: UInt16)
}

/// The pairings on the links where this host is the peripheral, while enrolment accepts them: one
/// `SMPPairingResponder` per link. A table with no I/O: `LELinks`, the links' one owner, feeds it the link's events
/// and does what it returns. While nothing accepts pairing it owns no link, and the links' `SMPResponder` refuses
/// every Pairing Request with Pairing Not Supported.
public struct PeripheralPairings: Sendable {
    /// What accepting pairing needs: the address we advertise from, the responder's settings, and where each
    /// pairing's fresh key pair and nonce come from.
    public struct Offer: Sendable {
        public var local: SMPPairingResponder.Party
        public var configuration: SMPPairingResponder.Configuration
        public var secrets: @Sendable () -> PairingSecrets
        /// The GATT database each link gets (`EnrolmentGATTServer`): its Device Name and Appearance.
        public var name: String
        public var appearance: UInt16

        public init(
            local: SMPPairingResponder.Party,
            configuration: SMPPairingResponder.Configuration = SMPPairingResponder.Configuration(),
            name: String = "BLEGateway", appearance: UInt16 = 0,
            secrets: @escaping @Sendable () -> PairingSecrets = PairingSecrets.fresh
        ) {
            self.name = name
            self.appearance = appearance
            self.local = local
            self.configuration = configuration
            self.secrets = secrets
        }
    }

    public enum Action: Sendable {
        /// An SMP command to send on the link (CID 0x0006).
        case send(handle: UInt16, [UInt8])
        /// An ATT response to send on the link (CID 0x0004).
        case sendATT(handle: UInt16, [UInt8])
        case replyLongTermKey(handle: UInt16, [UInt8])
        case refuseLongTermKey(handle: UInt16)
        case report(PairingEvent)
    }

    public private(set) var offer: Offer?
    var sessions: [UInt16: SMPPairingResponder] = [:]
    var servers: [UInt16: EnrolmentGATTServer] = [:]

    /// What the Security Request asks for (Vol 3, Part H, §3.6.7): bonding, MITM protection, Secure Connections —
    /// what the pairing that follows gives.
    static let securityRequested = SMPAuthRequirements.bonding | .mitm | .secureConnections

    public init() {}

    /// Whether links where we are the peripheral get a responder: from `accept` until `stop`.
    public var isAccepting: Bool { offer != nil }

    public mutating func accept(_ offer: Offer) { self.offer = offer }

    /// Stops accepting: pairings already under way end with their links.
    public mutating func stop() { offer = nil }

    /// LE Connection Complete with us as peripheral (Role 0x01, §7.7.65.1).
    /// The link's GATT database answers from now on, and the pairing is asked for at once with a Security Request:
    /// an iPhone pairs only when asked (an Android phone or BlueZ sends its Pairing Request either way).
    public mutating func linkOpened(handle: UInt16, peer: SMPPairingResponder.Party, now: Duration) -> [Action] {
        guard let offer else { return [] }
        let s = offer.secrets()
        sessions[handle] = SMPPairingResponder(
            configuration: offer.configuration, initiator: peer, responder: offer.local, privateKey: s.privateKey,
            publicKey: s.publicKey, nonce: s.nonce, passkey: s.passkey, passkeyNonces: s.passkeyNonces, now: now)
        servers[handle] = EnrolmentGATTServer(name: offer.name, appearance: offer.appearance)
        return [
            .report(.connected(handle: handle, peer: peer)),
            .send(handle: handle, SMPPDU.securityRequest(Self.securityRequested).bytes),
        ]
    }

    public mutating func linkClosed(handle: UInt16) -> [Action] {
        servers[handle] = nil
        guard sessions.removeValue(forKey: handle) != nil else { return [] }
        return [.report(.disconnected(handle: handle))]
    }

    /// An ATT PDU on `handle`; nil when the link is not an enrolling phone's (the link's bearer takes it).
    public mutating func attReceived(_ pdu: [UInt8], handle: UInt16) -> [Action]? {
        guard let server = servers[handle] else { return nil }
        return server.received(pdu).map { [.sendATT(handle: handle, $0)] } ?? []
    }

    /// An SMP command on `handle`; nil when no pairing owns the link (the refusing `SMPResponder` answers).
    public mutating func received(_ bytes: [UInt8], handle: UInt16, now: Duration) -> [Action]? {
        guard sessions[handle] != nil else { return nil }
        return drive(handle, .received(bytes), now: now)
    }

    /// LE Long Term Key Request (§7.7.65.5). A link with no pairing of ours has no key: the Negative Reply, so
    /// the controller does not wait for an answer that never comes.
    public mutating func longTermKeyRequested(handle: UInt16, now: Duration) -> [Action] {
        guard sessions[handle] != nil else { return [.refuseLongTermKey(handle: handle)] }
        return drive(handle, .longTermKeyRequested, now: now)
    }

    /// Encryption Change (§7.7.8); Status non-zero leaves the link unencrypted.
    public mutating func encryptionChanged(handle: UInt16, on: Bool, now: Duration) -> [Action] {
        servers[handle]?.encryptionChanged(on: on)
        guard sessions[handle] != nil else { return [] }
        return drive(handle, .encryptionChanged(on: on), now: now)
    }

    /// The operator's answer to a Numeric Comparison.
    public mutating func confirm(handle: UInt16, _ yes: Bool, now: Duration) -> [Action] {
        guard sessions[handle] != nil else { return [] }
        return drive(handle, .userConfirmed(yes), now: now)
    }

    /// The SMP timers: every pairing whose 30 s have run out fails.
    public mutating func tick(now: Duration) -> [Action] {
        sessions.keys.sorted().flatMap { h in
            sessions[h]!.nextDeadline.map { $0 <= now } == true ? drive(h, .tick, now: now) : []
        }
    }

    /// The earliest SMP timer of a pairing under way.
    public var nextDeadline: Duration? { sessions.values.compactMap(\.nextDeadline).min() }

    private mutating func drive(_ handle: UInt16, _ event: SMPPairingResponder.Event, now: Duration) -> [Action] {
        sessions[handle]!.handle(event, now: now).map { action in
            switch action {
            case .send(let bytes): .send(handle: handle, bytes)
            case .compare(let digits): .report(.compare(handle: handle, digits: digits))
            case .display(let passkey): .report(.passkey(handle: handle, passkey))
            case .replyLongTermKey(let key): .replyLongTermKey(handle: handle, key)
            case .refuseLongTermKey: .refuseLongTermKey(handle: handle)
            case .paired(let identity): .report(.paired(handle: handle, identity))
            case .failed(let failure): .report(.failed(handle: handle, failure))
            }
        }
    }
}
