import CMosquitto
import Foundation

/// An MQTT failure as a value: what kind, the number the library or the broker gave, and its name.
///
/// - `library`: a libmosquitto return code (`MOSQ_ERR_*`), named by symbol and `mosquitto_strerror`.
/// - `connectionRefused`: the CONNACK's code — MQTT 3.1.1 return code (§3.2.2.3) named by
///   `mosquitto_connack_string`, or MQTT 5 reason code (§3.2.2.2) named by `mosquitto_reason_string`.
/// - `reasonCode`: an MQTT 5 reason code in a DISCONNECT from the broker or in a PUBACK/PUBREC (§2.4).
/// - `notAcknowledged`: the connection ended before the broker acknowledged a publish; it may or may not have
///   arrived, so the caller keeps it and publishes it again (at-least-once).
public struct MQTTError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Kind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let library = Kind(rawValue: "libmosquitto")
        public static let connectionRefused = Kind(rawValue: "connection refused")
        public static let reasonCode = Kind(rawValue: "MQTT 5 reason")
        public static let notAcknowledged = Kind(rawValue: "not acknowledged")
        public static let notConnected = Kind(rawValue: "not connected")
        public static let inFlightWindowFull = Kind(rawValue: "in-flight window full")
        public static let credentials = Kind(rawValue: "credentials")
        public static let invalidArgument = Kind(rawValue: "invalid argument")
    }

    public let kind: Kind
    /// The library's, the broker's or the system's number (0 where there is none).
    public let code: Int
    /// The code's name, e.g. "MOSQ_ERR_TLS" or "Bad user name or password".
    public let name: String
    /// What else is known: libmosquitto's last error log line (OpenSSL's reason for a TLS failure), a path.
    public let detail: String?

    public init(kind: Kind, code: Int, name: String, detail: String? = nil) {
        self.kind = kind
        self.code = code
        self.name = name
        self.detail = detail
    }

    public var description: String {
        var text = "MQTT \(kind) \(code) \(name)"
        if let detail, !detail.isEmpty { text += ": \(detail)" }
        return text
    }

    /// libmosquitto refused to send this message as it is, before it reached the wire: larger than the broker's
    /// Maximum Packet Size from its CONNACK (`MOSQ_ERR_OVERSIZE_PACKET`) or than MQTT allows (`MOSQ_ERR_PAYLOAD_SIZE`),
    /// a topic that is not valid UTF-8 (`MOSQ_ERR_MALFORMED_UTF8`) or not a topic name (`MOSQ_ERR_INVAL`). Sending it
    /// again can never succeed; the next message can.
    public var isLocalRefusalOfThisMessage: Bool {
        kind == .library
            && [Self.payloadSize, Self.malformedUTF8, Self.oversizePacket, Self.invalidArgument].contains(code)
    }

    /// The broker announced (CONNACK Maximum QoS) that it does not take the QoS asked for: a broker configuration to
    /// fix, so the reading waits.
    public var isQoSNotSupported: Bool { kind == .library && code == Self.qosNotSupported }

    static let invalidArgument = Int(MOSQ_ERR_INVAL.rawValue)
    static let payloadSize = Int(MOSQ_ERR_PAYLOAD_SIZE.rawValue)
    static let malformedUTF8 = Int(MOSQ_ERR_MALFORMED_UTF8.rawValue)
    static let qosNotSupported = Int(MOSQ_ERR_QOS_NOT_SUPPORTED.rawValue)
    static let oversizePacket = Int(MOSQ_ERR_OVERSIZE_PACKET.rawValue)

    /// The broker refused bad credentials or authorisation: 3.1.1 return codes 4 and 5, MQTT 5 reason codes 0x86,
    /// 0x87 and 0x8C (the two numbering schemes do not overlap).
    public var isAuthenticationFailure: Bool {
        guard kind == .connectionRefused else { return false }
        let v311: Set<MQTTConnectReturnCode> = [.badUserNameOrPassword, .notAuthorized]
        let v5: Set<MQTTReasonCode> = [.badUserNameOrPassword, .notAuthorized, .badAuthenticationMethod]
        return v311.contains(MQTTConnectReturnCode(rawValue: code)) || v5.contains(MQTTReasonCode(rawValue: code))
    }
}

extension MQTTError {
    /// - Parameter errno: for MOSQ_ERR_ERRNO ("see errno"), the `errno` taken right after the failing call, since
    ///   `mosquitto_strerror` reads it later, when it says "Success" or whatever another call left.
    static func library(_ rc: Int32, errno: Int32 = 0, detail: String? = nil) -> MQTTError {
        let symbol = libraryErrorSymbols[Int(rc)] ?? "MOSQ_ERR_\(rc)"
        let text =
            Int(rc) == Int(MOSQ_ERR_ERRNO.rawValue)
            ? (errno != 0 ? String(cString: strerror(errno)).lowercased() : "the system's error was not kept")
            : libraryErrorTexts[Int(rc)] ?? String(cString: mosquitto_strerror(rc))
        return MQTTError(kind: .library, code: Int(rc), name: "\(symbol) (\(text))", detail: detail)
    }

    static func refused(_ code: Int32, protocolVersion: MQTTProtocolVersion) -> MQTTError {
        let name =
            protocolVersion == .v5
            ? String(cString: mosquitto_reason_string(code)) : String(cString: mosquitto_connack_string(code))
        return MQTTError(kind: .connectionRefused, code: Int(code), name: name)
    }

    static func reason(_ code: Int32) -> MQTTError {
        MQTTError(kind: .reasonCode, code: Int(code), name: String(cString: mosquitto_reason_string(code)))
    }

    static let notAcknowledged = MQTTError(kind: .notAcknowledged, code: 0, name: "connection ended before the ack")
    static let notConnected = MQTTError(kind: .notConnected, code: 0, name: "not connected to the broker")
    static func windowFull(_ limit: Int) -> MQTTError {
        MQTTError(kind: .inFlightWindowFull, code: limit, name: "\(limit) publishes already await acknowledgement")
    }

    /// `mosquitto_disconnect_v5`'s `rc` is a libmosquitto error, or — when the broker sent DISCONNECT — an MQTT 5
    /// reason code. Reason codes for errors are ≥ 0x80 (§2.4) and libmosquitto's errors are small, so the range
    /// tells them apart.
    static func disconnect(_ rc: Int32, errno: Int32 = 0, detail: String?) -> MQTTError {
        MQTTReasonCode(rawValue: Int(rc)).isFailure ? reason(rc) : library(rc, errno: errno, detail: detail)
    }
}

/// `enum mosq_err_t` of mosquitto.h, by number, so unknown values still print.
private let libraryErrorSymbols: [Int: String] = [
    -4: "MOSQ_ERR_AUTH_CONTINUE", -3: "MOSQ_ERR_NO_SUBSCRIBERS", -2: "MOSQ_ERR_SUB_EXISTS",
    -1: "MOSQ_ERR_CONN_PENDING", 0: "MOSQ_ERR_SUCCESS", 1: "MOSQ_ERR_NOMEM", 2: "MOSQ_ERR_PROTOCOL",
    3: "MOSQ_ERR_INVAL", 4: "MOSQ_ERR_NO_CONN", 5: "MOSQ_ERR_CONN_REFUSED", 6: "MOSQ_ERR_NOT_FOUND",
    7: "MOSQ_ERR_CONN_LOST", 8: "MOSQ_ERR_TLS", 9: "MOSQ_ERR_PAYLOAD_SIZE", 10: "MOSQ_ERR_NOT_SUPPORTED",
    11: "MOSQ_ERR_AUTH", 12: "MOSQ_ERR_ACL_DENIED", 13: "MOSQ_ERR_UNKNOWN", 14: "MOSQ_ERR_ERRNO",
    15: "MOSQ_ERR_EAI", 16: "MOSQ_ERR_PROXY", 17: "MOSQ_ERR_PLUGIN_DEFER", 18: "MOSQ_ERR_MALFORMED_UTF8",
    19: "MOSQ_ERR_KEEPALIVE", 20: "MOSQ_ERR_LOOKUP", 21: "MOSQ_ERR_MALFORMED_PACKET",
    22: "MOSQ_ERR_DUPLICATE_PROPERTY", 23: "MOSQ_ERR_TLS_HANDSHAKE", 24: "MOSQ_ERR_QOS_NOT_SUPPORTED",
    25: "MOSQ_ERR_OVERSIZE_PACKET", 26: "MOSQ_ERR_OCSP", 27: "MOSQ_ERR_TIMEOUT", 28: "MOSQ_ERR_RETAIN_NOT_SUPPORTED",
    29: "MOSQ_ERR_TOPIC_ALIAS_INVALID", 30: "MOSQ_ERR_ADMINISTRATIVE_ACTION", 31: "MOSQ_ERR_ALREADY_EXISTS",
]

/// Errors Debian 12's libmosquitto (2.0.11) has no text for: its `mosquitto_strerror` says "Unknown error." for a
/// connection the keepalive ended, the one a stalled network gives.
private let libraryErrorTexts: [Int: String] = [
    19: "no packet from the broker within the keepalive period, mqtt.keepalive_s"
]
