/// A peer's Identity Resolving Key as the kernel's Security Manager announces it when a pairing distributes one:
/// the management interface's New Identity Resolving Key event (BlueZ doc/mgmt-api.txt, event 0x0018), which the
/// kernel copies to the monitor channel as a control event. In shared mode this is the one moment the key can be
/// read: the kernel has no command that returns a stored IRK (Load Identity Resolving Keys only writes them), and
/// bluetoothd keeps its copy in a root-only file.
public struct KernelIdentityKey: Sendable, Hashable {
    /// The adapter whose pairing distributed it.
    public var index: UInt16
    /// The resolvable private address the peer used, or 00:00:00:00:00:00 when none was resolved yet.
    public var randomAddress: BDAddress
    public var identity: BDAddress
    /// The identity address's type: true for LE Public (0x01), false for LE Random (0x02).
    public var identityIsPublic: Bool
    /// Most significant octet first, as the specification writes keys (the event carries it least significant first,
    /// as on the air).
    public var key: [UInt8]

    /// BTSNOOP_OPCODE_CTRL_EVENT (BlueZ monitor/bt.h): `cookie LE32 | event opcode LE16 | parameters`.
    static let monitorControlEvent: UInt16 = 17
    /// MGMT_EV_NEW_IRK: Store_Hint (1), Random_Address (6), Key: Address (6), Address_Type (1), Value (16).
    static let newIdentityResolvingKey: UInt16 = 0x0018
    /// Address_Type 0x01 LE Public, 0x02 LE Random (mgmt-api.txt, "Address types").
    static let lePublic: UInt8 = 0x01
    static let leRandom: UInt8 = 0x02

    /// One monitor message: a New Identity Resolving Key event, or nil for anything else and for one cut short.
    public static func parse(_ bytes: some Collection<UInt8>) -> KernelIdentityKey? {
        var c = ByteCursor(Array(bytes))
        guard c.readLE16() == monitorControlEvent, let index = c.readLE16(), let length = c.readLE16(),
            var body = c.readBytes(Int(length)).map({ ByteCursor(Array($0)) }),
            body.readLE32() != nil, body.readLE16() == newIdentityResolvingKey, body.readU8() != nil,
            let random = BDAddress.read(from: &body), let identity = BDAddress.read(from: &body),
            let type = body.readU8(), type == lePublic || type == leRandom, let value = body.readBytes(16)
        else { return nil }
        return KernelIdentityKey(
            index: index, randomAddress: random, identity: identity, identityIsPublic: type == lePublic,
            key: Array(value.reversed()))
    }
}
