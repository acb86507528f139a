import BLEHCI
import BLETransport

/// What a btsnoop capture (`--capture`) keeps of a pairing's secrets: nothing, unless asked (`--capture-keys`). A
/// capture is sent to others to debug a problem, and HCI carries keys in the clear (the controller encrypts below it):
/// a phone's Identity Resolving Key in its Identity Information follows that phone through every address it takes.
/// Each key's octets are zeroed in place, so the record keeps its length and Wireshark still dissects it.
public enum CaptureRedaction {
    /// `packet` as a capture may keep it.
    @Sendable public static func redact(_ packet: H4Packet) -> H4Packet {
        var p = packet
        switch packet.type {
        case .command: redactCommand(&p.payload)
        case .acl: redactSMP(&p.payload)
        default: break
        }
        return p
    }

    /// Commands whose parameters carry a key (Core v5.4, Vol 4, Part E, §7.8): where the key starts among the
    /// parameters, and how many octets.
    static let commandKeys: [HCIOpcode: [(offset: Int, count: Int)]] = [
        // Connection_Handle (2), Random_Number (8), Encrypted_Diversifier (2), Long_Term_Key (16) (§7.8.24).
        .leEnableEncryption: [(12, 16)],
        // Connection_Handle (2), Long_Term_Key (16) (§7.8.25).
        .leLongTermKeyRequestReply: [(2, 16)],
        // Peer_Identity_Address_Type (1), Peer_Identity_Address (6), Peer_IRK (16), Local_IRK (16) (§7.8.38).
        .leAddDeviceToResolvingList: [(7, 16), (23, 16)],
    ]

    /// SMP key distribution (Vol 3, Part H, §3.6): the octets after the code that are secret.
    static let smpKeys: [SMPCode: Int] = [
        .encryptionInformation: 16,  // Long Term Key
        .centralIdentification: 10,  // EDIV (2), Rand (8): with the LTK they name the key
        .identityInformation: 16,  // Identity Resolving Key
        .signingInformation: 16,  // Connection Signature Resolving Key
    ]

    private static func redactCommand(_ payload: inout [UInt8]) {
        // Opcode (2), Parameter_Total_Length (1), parameters.
        var c = ByteCursor(payload[...])
        guard let raw = c.readLE16(), let keys = commandKeys[HCIOpcode(rawValue: raw)] else { return }
        for k in keys { zero(&payload, from: 3 + k.offset, count: k.count) }
    }

    private static func redactSMP(_ payload: inout [UInt8]) {
        // A key distribution PDU (at most 17 octets with its L2CAP header's 4) always fits the first fragment of the
        // LE minimum 27-octet ACL buffer; continuing fragments carry only the public key, which is not secret.
        guard let acl = ACLDataPacket.parse(payload[...]), acl.header.packetBoundary != .continuing else { return }
        var c = ByteCursor(acl.data)
        guard c.readLE16() != nil, let cid = c.readLE16(), cid == L2CAPChannelID.securityManager.rawValue,
            let code = c.readU8(), let count = smpKeys[SMPCode(rawValue: code)]
        else { return }
        zero(&payload, from: ACLHeader.size + 4 + 1, count: count)
    }

    private static func zero(_ bytes: inout [UInt8], from start: Int, count: Int) {
        guard start < bytes.count else { return }
        for i in start..<min(bytes.count, start + count) { bytes[i] = 0 }
    }
}
