import BLETransport

/// An MQTT 5 reason code (MQTT v5.0 §2.4, the table of reason codes) as CONNACK, PUBACK, PUBREC, SUBACK and DISCONNECT
/// carry it: an open set, printed with its number and the specification's name.
public struct MQTTReasonCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    public static let success = Self(rawValue: 0x00)
    public static let noMatchingSubscribers = Self(rawValue: 0x10)
    public static let unspecifiedError = Self(rawValue: 0x80)
    public static let implementationSpecificError = Self(rawValue: 0x83)
    public static let badUserNameOrPassword = Self(rawValue: 0x86)
    public static let notAuthorized = Self(rawValue: 0x87)
    public static let badAuthenticationMethod = Self(rawValue: 0x8C)
    public static let serverBusy = Self(rawValue: 0x89)
    public static let topicNameInvalid = Self(rawValue: 0x90)
    public static let packetIdentifierInUse = Self(rawValue: 0x91)
    public static let packetTooLarge = Self(rawValue: 0x95)
    public static let quotaExceeded = Self(rawValue: 0x97)
    public static let qosNotSupported = Self(rawValue: 0x9B)
    public static let payloadFormatInvalid = Self(rawValue: 0x99)

    public var name: String? {
        switch self {
        case .success: "Success"
        case .noMatchingSubscribers: "No matching subscribers"
        case .unspecifiedError: "Unspecified error"
        case .implementationSpecificError: "Implementation specific error"
        case .badUserNameOrPassword: "Bad User Name or Password"
        case .notAuthorized: "Not authorized"
        case .badAuthenticationMethod: "Bad authentication method"
        case .serverBusy: "Server busy"
        case .topicNameInvalid: "Topic Name invalid"
        case .packetIdentifierInUse: "Packet Identifier in use"
        case .packetTooLarge: "Packet too large"
        case .quotaExceeded: "Quota exceeded"
        case .qosNotSupported: "QoS not supported"
        case .payloadFormatInvalid: "Payload format invalid"
        default: nil
        }
    }

    /// §2.4: "Reason Code values of 0x80 or greater indicate failure" (MQTT 3.1.1's SUBACK says the same with its
    /// one failure code, 0x80, §3.9.3).
    public var isFailure: Bool { rawValue >= 0x80 }

    public var description: String {
        let number = "0x" + upperHex(rawValue, digits: 2)
        return name.map { "\(number) \($0)" } ?? number
    }

    /// What a refused publish is: a refusal that an operator or time can lift (the broker's ACL, a quota, load, its
    /// own trouble) keeps the reading to be sent again; one that no retry can change (the packet, its topic or
    /// payload is what is wrong) does not.
    public var isLastingForThisMessage: Bool {
        self == .topicNameInvalid || self == .packetTooLarge || self == .payloadFormatInvalid
    }
}

/// An MQTT 3.1.1 CONNACK return code (MQTT v3.1.1 §3.2.2.3, Table 3.1): an open set, printed with its number and the
/// specification's words.
public struct MQTTConnectReturnCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    public static let accepted = Self(rawValue: 0)
    public static let unacceptableProtocolVersion = Self(rawValue: 1)
    public static let identifierRejected = Self(rawValue: 2)
    public static let serverUnavailable = Self(rawValue: 3)
    public static let badUserNameOrPassword = Self(rawValue: 4)
    public static let notAuthorized = Self(rawValue: 5)

    public var name: String? {
        switch self {
        case .accepted: "Connection Accepted"
        case .unacceptableProtocolVersion: "Connection Refused, unacceptable protocol version"
        case .identifierRejected: "Connection Refused, identifier rejected"
        case .serverUnavailable: "Connection Refused, Server unavailable"
        case .badUserNameOrPassword: "Connection Refused, bad user name or password"
        case .notAuthorized: "Connection Refused, not authorized"
        default: nil
        }
    }

    public var description: String { name.map { "\(rawValue) \($0)" } ?? "\(rawValue)" }
}
