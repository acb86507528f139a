/// Quality of service (MQTT 5 §4.3).
public enum MQTTQoS: Int, Sendable, Comparable {
    /// At most once: no acknowledgement; "done" means written to the socket.
    case atMostOnce = 0
    /// At least once: done on PUBACK.
    case atLeastOnce = 1
    /// Exactly once: done on PUBCOMP.
    case exactlyOnce = 2

    public static func < (a: MQTTQoS, b: MQTTQoS) -> Bool { a.rawValue < b.rawValue }
}

/// One application message, sent or received.
public struct MQTTMessage: Sendable, Equatable {
    /// Topic name (no wildcards when publishing).
    public var topic: String
    /// Payload bytes.
    public var payload: [UInt8]
    /// Delivery guarantee.
    public var qos: MQTTQoS
    /// Retain flag: sent — the broker keeps it for future subscribers; received — it is a retained message.
    public var retain: Bool
    /// MQTT 5 Message Expiry Interval (§3.3.2.3.3) in seconds; the broker drops the message when it runs out and
    /// forwards the remaining lifetime. Ignored with MQTT 3.1.1.
    public var messageExpiryInterval: UInt32?

    public init(
        topic: String, payload: [UInt8], qos: MQTTQoS = .atLeastOnce, retain: Bool = false,
        messageExpiryInterval: UInt32? = nil
    ) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
        self.messageExpiryInterval = messageExpiryInterval
    }
}

/// The packet identifier libmosquitto gave a publish (its `mid`; QoS 0 gets one too). Identifiers are reused once
/// a publish completes, so this names a publish only while it is in flight.
public struct MQTTPublishID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }
    public var description: String { "mid \(rawValue)" }
}
