import BLETransport

/// One client's byte stream as ESPHome's API frames it: the noise hello and handshake (or plaintext when no key
/// is configured), then messages. Bytes in, actions out; the caller reads and writes the socket.
public struct ESPHomeConnection: Sendable {
    enum State: Sendable {
        /// Noise: the ClientHello frame (its payload is not read) comes first.
        case awaitingClientHello(NoiseHandshake)
        /// Noise: the ServerHello went out; the initiator's handshake message is next.
        case awaitingHandshake(NoiseHandshake)
        case encrypted(NoiseHandshake.Transport)
        case plaintext
        case closed
    }

    public enum Action: Equatable, Sendable {
        case write([UInt8])
        case message(ESPHomeMessageType, [UInt8])
        /// Write nothing more and close; the reason is what the log and the counters say.
        case close(Failure)
    }

    /// Why a connection was closed by us. Each is counted (`ESPHomeStatistics`).
    public enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        case framing(ESPHomeFrames.ReadError)
        /// The handshake frame did not start with 0x00, or its message was short.
        case handshake(String)
        /// The client holds another key ("Handshake MAC failure", which aioesphomeapi reports as an invalid key).
        case wrongKey
        /// An encrypted frame that did not authenticate, or whose inner size disagrees with its length.
        case decryption(String)

        public var description: String {
            switch self {
            case .framing(let e): "\(e)"
            case .handshake(let why): "handshake: \(why)"
            case .wrongKey: "Handshake MAC failure (the client's key is not ours)"
            case .decryption(let why): "decryption: \(why)"
            }
        }
    }

    private(set) var state: State
    /// Received and not yet a whole frame.
    private var pending: [UInt8] = []
    /// The ServerHello's name and MAC (`name\0mac\0` after the chosen protocol).
    let name: String
    let mac: String

    /// - Parameter psk: the 32-byte key; nil serves plaintext (only when the configuration gives no key).
    public init(psk: [UInt8]?, name: String, mac: String) {
        self.init(handshake: psk.map { NoiseHandshake(psk: $0) }, name: name, mac: mac)
    }

    /// - Parameter handshake: the responder's handshake (tests give its ephemeral key); nil serves plaintext.
    init(handshake: NoiseHandshake?, name: String, mac: String) {
        self.name = name
        self.mac = mac
        state = handshake.map { .awaitingClientHello($0) } ?? .plaintext
    }

    /// The frames in `bytes` (with what came before), in order.
    public mutating func received(_ bytes: some Collection<UInt8>) -> [Action] {
        pending += bytes
        var actions: [Action] = []
        var cursor = ByteCursor(pending)
        defer { pending.removeFirst(pending.count - cursor.remaining) }
        do {
            while true {
                switch state {
                case .closed:
                    return actions
                case .plaintext:
                    guard let (type, message) = try ESPHomeFrames.readPlaintext(&cursor) else { return actions }
                    actions.append(.message(type, Array(message)))
                case .awaitingClientHello(let handshake):
                    guard try ESPHomeFrames.readNoise(&cursor) != nil else { return actions }
                    actions.append(.write(ESPHomeFrames.noise(serverHello)))
                    state = .awaitingHandshake(handshake)
                case .awaitingHandshake(var handshake):
                    guard let frame = try ESPHomeFrames.readNoise(&cursor) else { return actions }
                    guard frame.first == 0x00 else {
                        return actions + reject("Handshake: wrong first byte", .handshake("wrong first byte"))
                    }
                    do {
                        let (reply, transport) = try handshake.respond(to: frame.dropFirst())
                        actions.append(.write(ESPHomeFrames.noise([0x00] + reply)))
                        state = .encrypted(transport)
                    } catch .authentication {
                        return actions + reject("Handshake MAC failure", .wrongKey)
                    } catch {
                        return actions + reject("Handshake: message too short", .handshake("message too short"))
                    }
                case .encrypted(var transport):
                    guard let frame = try ESPHomeFrames.readNoise(&cursor) else { return actions }
                    guard let plain = try? transport.receiving.decrypt(frame, ad: []) else {
                        state = .closed
                        return actions + [.close(.decryption("a frame did not authenticate"))]
                    }
                    state = .encrypted(transport)
                    var inner = ByteCursor(plain)
                    guard let type = inner.readBE16(), let size = inner.readBE16(), Int(size) == inner.remaining
                    else {
                        state = .closed
                        return actions + [.close(.decryption("inner header disagrees with the frame"))]
                    }
                    actions.append(.message(ESPHomeMessageType(rawValue: type), Array(inner.rest)))
                }
            }
        } catch {
            // A plaintext client at an encrypted server is told in a frame it reads as "requires encryption".
            if case .awaitingClientHello = state, case .badIndicator = error {
                return actions + reject("\(error)", .framing(error))
            }
            state = .closed
            return actions + [.close(.framing(error))]
        }
    }

    /// One message as the client reads it: framed, and encrypted once the handshake is done. Nil once closed or
    /// before the handshake ends (nothing may be sent then).
    public mutating func frame(_ type: ESPHomeMessageType, _ message: [UInt8]) -> [UInt8]? {
        switch state {
        case .plaintext:
            return ESPHomeFrames.plaintext(type, message)
        case .encrypted(var transport):
            guard let sealed = try? transport.sending.encrypt(ESPHomeFrames.noiseMessage(type, message), ad: [])
            else { return nil }
            state = .encrypted(transport)
            return ESPHomeFrames.noise(sealed)
        case .awaitingClientHello, .awaitingHandshake, .closed:
            return nil
        }
    }

    private var serverHello: [UInt8] {
        // 0x01: the one protocol there is, Noise_NNpsk0_25519_ChaChaPoly_SHA256.
        [0x01] + Array(name.utf8) + [0] + Array(mac.utf8) + [0]
    }

    /// ESPHome's explicit handshake rejection: a frame starting 0x01 with the reason, then the close.
    private mutating func reject(_ explanation: String, _ failure: Failure) -> [Action] {
        state = .closed
        return [.write(ESPHomeFrames.noise([0x01] + Array(explanation.utf8))), .close(failure)]
    }
}
