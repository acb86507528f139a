import BLEConfiguration
import BLEHost
import BLESpool
import BLETransport

/// The enrolment topic's payloads (docs/TOPICS.md, schema/v1/enrol-state.json). Never the IRK: it is a secret.
extension GatewayReadings {
    enum EnrolmentStep: Equatable {
        /// Advertising as `name` from the gateway's `address`; pair from the phone now.
        case advertising(name: String, address: BDAddress)
        case connected(BDAddress)
        /// Numeric Comparison: the six digits both sides show. `awaiting`: a `confirm` message answers.
        case compare(UInt32, awaiting: Bool)
        /// Passkey Entry: the number to type on the phone.
        case passkey(UInt32)
        case enrolled(name: String, identity: SMPPairingResponder.PeerIdentity, change: IdentityKeyFile.Change)
        case failed(String)
        /// A command refused (malformed, a second start, an answer nobody waits for): the enrolment running, if any,
        /// goes on.
        case refused(String)
    }

    func enrolment(_ step: EnrolmentStep, id: String?, ts: Double, synced: Bool) -> Reading {
        var o = JSONObjectWriter()
        if let id { o.string("id", id) }
        switch step {
        case .advertising(let name, let address):
            o.string("state", "advertising")
            o.string("advertise", name)
            o.string("address", address.description)
        case .connected(let peer):
            o.string("state", "connected")
            o.string("peer", peer.description)
        case .compare(let digits, let awaiting):
            o.string("state", "compare")
            o.string("digits", Self.sixDigits(digits))
            o.bool("awaiting_confirm", awaiting)
        case .passkey(let passkey):
            o.string("state", "passkey")
            o.string("passkey", Self.sixDigits(passkey))
        case .enrolled(let name, let identity, let change):
            o.string("state", "enrolled")
            o.string("name", name)
            o.string("identity", identity.address.description)
            o.string("identity_type", identity.addressType == .public ? "public" : "random")
            switch change {
            case .added: o.string("change", "added")
            case .updated(let previous):
                o.string("change", "updated")
                o.string("previous_name", previous)
            }
        case .failed(let error):
            o.string("state", "failed")
            o.string("error", error)
        case .refused(let error):
            o.string("state", "refused")
            o.string("error", error)
        }
        return Reading(
            .state, topic: topics.enrolState, body: o.finished, qos: stateQoS, retain: false, ts: ts,
            clockSynchronized: synced, run: run)
    }

    /// Six decimal digits with leading zeros, as the phone shows them.
    static func sixDigits(_ n: UInt32) -> String {
        let s = String(n % 1_000_000)
        return String(repeating: "0", count: 6 - s.count) + s
    }
}
