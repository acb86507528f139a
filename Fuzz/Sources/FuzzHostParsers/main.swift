// One libFuzzer input is a selector octet and the bytes a peer controls, for the parsers above HCI that take bytes
// from a connected device: ATT PDUs (each decoder, the client state machine answering a request, and the enrolment's
// GATT server answering one), L2CAP LE
// signalling commands, ACL reassembly into L2CAP frames, GATT characteristic value decoding with the JSON it
// renders, and SMP: each PDU's parser and the pairing responder a phone drives (any phone in range can start one). Any trap or sanitizer report is a finding: each promises to throw, return nil or count instead.
import BLEDomain
import BLEHCI
import BLEHost
import BLETransport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let selector = data[0]
    let bytes = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    switch selector % 5 {
    case 0: att(bytes)
    case 1: signalling(bytes)
    case 2: reassembly(bytes)
    case 3: gattValue(bytes)
    default: pairing(bytes)
    }
    return 0
}

let everyHandle: ClosedRange<UInt16> = 0x0001...0xFFFF

/// The enrolment's GATT database answers whatever an enrolling phone sends, before and after encryption.
let enrolmentServer = EnrolmentGATTServer(name: "BLEGateway fuzz", appearance: 0x0340)

func att(_ pdu: [UInt8]) {
    var server = enrolmentServer
    _ = server.received(pdu)
    server.encryptionChanged(on: true)
    _ = server.received(pdu)
    _ = try? ATTErrorResponse.decode(pdu)
    _ = try? ATTPDU.decodeExchangeMTUResponse(pdu)
    _ = try? ATTPDU.decodeFindInformationResponse(pdu, range: everyHandle)
    _ = try? ATTPDU.decodeFindInformationResponse(pdu, range: 0x0010...0x0020)
    _ = try? ATTPDU.decodeReadByTypeResponse(pdu, range: everyHandle)
    _ = try? ATTPDU.decodeReadResponse(pdu)
    _ = try? ATTPDU.decodeReadBlobResponse(pdu)
    _ = try? ATTPDU.decodeReadByGroupTypeResponse(pdu, range: everyHandle)
    _ = try? ATTPDU.decodeWriteResponse(pdu)
    _ = try? ATTPDU.decodeHandleValue(pdu, .handleValueNotification)
    _ = try? ATTPDU.decodeHandleValue(pdu, .handleValueIndication)
    // The client waiting for an answer to a read, then receiving these bytes (an answer, an error, an unsolicited
    // PDU), then its timeout.
    var client = ATTClientCore()
    _ = client.request(1, ATTPDU.readRequest(handle: 3), now: .zero)
    _ = client.receive(pdu, now: .milliseconds(1))
    _ = client.tick(now: .seconds(31))
}

func signalling(_ bytes: [UInt8]) {
    // Several commands in a row on one channel: the input is cut at each 0xFF octet.
    var s = L2CAPLESignaling()
    for command in bytes.split(separator: 0xFF, omittingEmptySubsequences: false) { _ = s.receive(Array(command)) }
}

func reassembly(_ bytes: [UInt8]) {
    // ACL data packets, each preceded by one octet giving its length: fragments of frames on a few handles.
    var r = ACLReassembler()
    var c = bytes[...]
    while let n = c.first {
        c = c.dropFirst()
        let packet = c.prefix(Int(n))
        c = c.dropFirst(packet.count)
        guard let acl = ACLDataPacket.parse(packet), let (_, frame) = r.receive(acl) else { continue }
        _ = frame.channel
        _ = frame.payload.count
    }
}

func gattValue(_ bytes: [UInt8]) {
    // The first two octets name a 16-bit characteristic UUID, the rest is its value.
    guard bytes.count >= 2 else { return }
    let uuid = BluetoothUUID(uuid16: UInt16(bytes[0]) | UInt16(bytes[1]) << 8)
    guard let value = GATTValueDecoding.decode(uuid, Array(bytes.dropFirst(2))) else { return }
    var json: [UInt8] = [UInt8(ascii: "{")]
    value.appendMembers(to: &json)
    json.append(UInt8(ascii: "}"))
    // Rendered JSON never carries a raw control character.
    precondition(!json.contains(where: { $0 < 0x20 }), "control character in a decoded GATT value")
}

/// One key pair for every input: a fresh one per pairing is what the gateway does, but an input that crashes must
/// replay the same way, and no input can match a key's DHKey anyway.
let secrets = PairingSecrets.fresh()

func pairing(_ bytes: [UInt8]) {
    // The responder as an enrolment runs it, fed a phone's commands (the input cut at each 0xFF octet); a lone
    // 0xFE, 0xFD, 0xFC or 0xFB is the operator confirming, the phone asking for the key, encryption coming on, or the
    // timer's deadline passing.
    var r = SMPPairingResponder(
        initiator: .init(type: .random, address: BDAddress(rawValue: 0x5A11_2233_4455)),
        responder: .init(type: .public, address: BDAddress(rawValue: 0x001B_DC10_0099)),
        privateKey: secrets.privateKey, publicKey: secrets.publicKey, nonce: secrets.nonce, now: .zero)
    var now = Duration.zero
    for command in bytes.split(separator: 0xFF, omittingEmptySubsequences: false) {
        now += .milliseconds(10)
        _ = SMPPDU.parse(command)
        switch Array(command) {
        case [0xFE]: _ = r.handle(.userConfirmed(true), now: now)
        case [0xFD]: _ = r.handle(.longTermKeyRequested, now: now)
        case [0xFC]: _ = r.handle(.encryptionChanged(on: true), now: now)
        case [0xFB]:
            now += .seconds(31)
            _ = r.handle(.tick, now: now)
        default: _ = r.handle(.received(Array(command)), now: now)
        }
    }
}
