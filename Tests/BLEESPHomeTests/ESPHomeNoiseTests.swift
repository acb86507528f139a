import BLETransport
import Crypto
import Testing

@testable import BLEESPHome

/// The handshake and the frames against bytes from the `noiseprotocol` library, the one aioesphomeapi (and so Home
/// Assistant) runs as the initiator: PSK 00 01 … 1f, the initiator's ephemeral key 0x11 × 32, ours 0x22 × 32.
/// (Made with noiseprotocol 0.3.1: `NoiseConnection.from_name(b"Noise_NNpsk0_25519_ChaChaPoly_SHA256")`, prologue
/// `NoiseAPIInit\0\0`, `set_keypair_from_private_bytes(Keypair.EPHEMERAL, …)` on both sides.)
struct ESPHomeNoiseTests {
    static let psk = [UInt8](0..<32)
    static var ours: Curve25519.KeyAgreement.PrivateKey {
        try! Curve25519.KeyAgreement.PrivateKey(rawRepresentation: [UInt8](repeating: 0x22, count: 32))
    }
    static let message1 = hex(
        "7b4e909bbe7ffe44c465a220037d608ee35897d31ef972f07f74892cb0f73f13d1bc1a38b6793685dc7e2ffdf8ea0933")
    static let message2 = hex(
        "0faa684ed28867b97f4a6a2dee5df8ce974e76b7018e3f22a1c4cf2678570f207336b95933b321b1ae86673f689f5c9f")
    /// The initiator's first transport message: HelloRequest (type 1) of 2 bytes, `0a 00`.
    static let clientHello = hex("082c88d64757b6514eaf80674be3845bafbcab00eeb3")
    /// Our first transport message as the library expects it: PingResponse (type 8), empty.
    static let serverPing = hex("d9423bf48bdea62bb10bbd87a7fb5ecc26721050")

    static func hex(_ s: String) -> [UInt8] {
        var out: [UInt8] = []
        var i = s.startIndex
        while i < s.endIndex {
            let j = s.index(i, offsetBy: 2)
            out.append(UInt8(s[i..<j], radix: 16)!)
            i = j
        }
        return out
    }

    static func frame(_ payload: [UInt8]) -> [UInt8] {
        [0x01, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)] + payload
    }

    @Test func theResponderAnswersTheLibrarysFirstMessageWithTheLibrarysSecond() throws {
        var handshake = NoiseHandshake(psk: Self.psk, ephemeral: Self.ours)
        var (reply, transport) = try handshake.respond(to: Self.message1[...])
        #expect(reply == Self.message2)
        #expect(try transport.receiving.decrypt(Self.clientHello[...], ad: []) == [0, 1, 0, 2, 0x0a, 0x00])
        #expect(try transport.sending.encrypt([0, 8, 0, 0], ad: []) == Self.serverPing)
    }

    @Test func aConnectionRunsHelloHandshakeAndAnEncryptedMessageEvenSplitByteByByte() {
        var c = ESPHomeConnection(
            handshake: NoiseHandshake(psk: Self.psk, ephemeral: Self.ours), name: "gw-1", mac: "AA:BB:CC:DD:EE:FF")
        let input = Self.frame([]) + Self.frame([0x00] + Self.message1) + Self.frame(Self.clientHello)
        var actions: [ESPHomeConnection.Action] = []
        for b in input { actions += c.received([b]) }
        #expect(
            actions == [
                .write(Self.frame([0x01] + Array("gw-1".utf8) + [0] + Array("AA:BB:CC:DD:EE:FF".utf8) + [0])),
                .write(Self.frame([0x00] + Self.message2)),
                .message(.helloRequest, [0x0a, 0x00]),
            ])
        #expect(c.frame(.pingResponse, []) == Self.frame(Self.serverPing))
    }

    @Test func aClientWithAnotherKeyIsToldHandshakeMACFailureAndClosed() {
        var c = ESPHomeConnection(
            handshake: NoiseHandshake(psk: [UInt8](repeating: 7, count: 32), ephemeral: Self.ours), name: "gw-1",
            mac: "AA:BB:CC:DD:EE:FF")
        _ = c.received(Self.frame([]))
        let actions = c.received(Self.frame([0x00] + Self.message1))
        #expect(actions == [.write(Self.frame([0x01] + Array("Handshake MAC failure".utf8))), .close(.wrongKey)])
        #expect(c.received(Self.frame(Self.clientHello)) == [], "nothing is read after the close")
        #expect(c.frame(.pingResponse, []) == nil)
    }

    @Test func aPlaintextClientAtAnEncryptedServerReadsAFrameThatStartsWithTheNoiseIndicator() {
        var c = ESPHomeConnection(psk: Self.psk, name: "gw-1", mac: "AA:BB:CC:DD:EE:FF")
        let actions = c.received([0x00, 0x02, 0x01, 0x0a, 0x00])
        #expect(
            actions == [
                .write(Self.frame([0x01] + Array("Bad indicator byte 0".utf8))), .close(.framing(.badIndicator(0))),
            ])
    }

    @Test func anEncryptedFrameThatDoesNotAuthenticateClosesTheConnection() {
        var c = ESPHomeConnection(
            handshake: NoiseHandshake(psk: Self.psk, ephemeral: Self.ours), name: "gw-1", mac: "AA:BB:CC:DD:EE:FF")
        _ = c.received(Self.frame([]) + Self.frame([0x00] + Self.message1))
        var tampered = Self.clientHello
        tampered[3] ^= 0x01
        #expect(c.received(Self.frame(tampered)) == [.close(.decryption("a frame did not authenticate"))])
    }
}

/// The plaintext framing ESPHome serves when no key is configured: `00 | varint size | varint type | message`.
struct ESPHomePlaintextFrameTests {
    @Test func framesArriveWholeWhateverTheReadsAndMultiByteVarintsDecode() {
        var c = ESPHomeConnection(psk: nil, name: "gw", mac: "")
        let big = [UInt8](repeating: 0xAB, count: 300)
        // 300 = ac 02 as a varint; type 93 = 5d.
        let input: [UInt8] = [0x00, 0x00, 0x07] + [0x00, 0xAC, 0x02, 0x5D] + big
        #expect(c.received(input.prefix(5)) == [.message(.pingRequest, [])])
        #expect(c.received(input.dropFirst(5)) == [.message(.bluetoothLERawAdvertisementsResponse, big)])
        #expect(c.frame(.pingResponse, []) == [0x00, 0x00, 0x08])
    }

    @Test func aFrameOverTheLimitAVarintPastFiveBytesAndANoiseClientAreRefused() {
        var long = ESPHomeConnection(psk: nil, name: "gw", mac: "")
        // 65,536 = 80 80 04.
        #expect(long.received([0x00, 0x80, 0x80, 0x04]) == [.close(.framing(.tooLong(65536)))])
        var varint = ESPHomeConnection(psk: nil, name: "gw", mac: "")
        #expect(varint.received([0x00, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]) == [.close(.framing(.badVarint))])
        var noise = ESPHomeConnection(psk: nil, name: "gw", mac: "")
        #expect(noise.received([0x01, 0x00, 0x00]) == [.close(.framing(.badIndicator(1)))])
    }
}
