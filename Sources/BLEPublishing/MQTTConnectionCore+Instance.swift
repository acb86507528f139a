import CMosquitto
import Foundation

/// The C side of the core: the `struct mosquitto *` made and configured from the configuration (protocol, window,
/// credentials, TLS, last will), and libmosquitto's callbacks, which only hand events to the core (see
/// MQTTConnectionCore.swift for the threads and the lock order).
extension MQTTConnectionCore {

    /// A new `struct mosquitto *` configured from `configuration`. Called with `lock` held.
    func makeInstanceLocked() throws(MQTTError) -> OpaquePointer {
        let context = Unmanaged.passUnretained(self).toOpaque()
        let clean = configuration.session == .clean
        guard let mosq = mosquitto_new(configuration.clientID, clean, context) else {
            throw MQTTError(
                kind: .library, code: Int(errno), name: "mosquitto_new failed",
                detail: String(cString: strerror(errno)))
        }
        do {
            try configureLocked(mosq)
        } catch {
            mosquitto_destroy(mosq)
            throw error
        }
        return mosq
    }

    func configureLocked(_ mosq: OpaquePointer) throws(MQTTError) {
        func check(_ rc: Int32, _ what: String) throws(MQTTError) {
            if rc != mosqSuccess { throw MQTTError.library(rc, detail: what) }
        }
        let version = configuration.protocolVersion == .v5 ? MQTT_PROTOCOL_V5 : MQTT_PROTOCOL_V311
        try check(mosquitto_int_option(mosq, MOSQ_OPT_PROTOCOL_VERSION, version), "protocol version")
        let window = Int32(clamping: min(max(configuration.maxInFlight, 1), 65535))
        try check(mosquitto_int_option(mosq, MOSQ_OPT_SEND_MAXIMUM, window), "send maximum")
        try check(mosquitto_threaded_set(mosq, true), "threaded")
        installCallbacks(mosq)
        if configuration.credentials != nil {
            try check(mosquitto_username_pw_set(mosq, secrets.username, secrets.password), "username/password")
        }
        if let tls = configuration.tls {
            let passwordCallback:
                (
                    @convention(c) (
                        UnsafeMutablePointer<CChar>?, Int32, Int32,
                        UnsafeMutableRawPointer?
                    ) -> Int32
                )?
            passwordCallback =
                secrets.keyPassphrase == nil
                ? nil
                : { buffer, size, _, userdata in
                    // OpenSSL's userdata here is the `struct mosquitto *` (lib/net_mosq.c), not our context.
                    guard let buffer, let userdata, let context = mosquitto_userdata(OpaquePointer(userdata)) else {
                        return 0
                    }
                    return Unmanaged<MQTTConnectionCore>.fromOpaque(context).takeUnretainedValue()
                        .copyPassphrase(into: buffer, size: size)
                }
            // Without a CA file or directory, the system's: libmosquitto 2.0.11 (Debian 12) refuses mosquitto_tls_set
            // without either (MOSQ_ERR_INVAL) even with MOSQ_OPT_TLS_USE_OS_CERTS, so Debian's hashed directory is
            // named as well.
            var caPath = tls.caPath
            if tls.caFile == nil, tls.caPath == nil {
                try check(mosquitto_int_option(mosq, MOSQ_OPT_TLS_USE_OS_CERTS, 1), "system CA certificates")
                caPath = Self.systemCADirectory
            }
            try check(
                mosquitto_tls_set(
                    mosq, tls.caFile, caPath, tls.certificateFile, tls.keyFile,
                    passwordCallback), "TLS files")
            try check(mosquitto_tls_insecure_set(mosq, !tls.verifyHostname), "TLS hostname verification")
        }
        if let will = configuration.will {
            let rc = will.payload.withUnsafeBytes { payload in
                mosquitto_will_set_v5(
                    mosq, will.topic, Int32(payload.count), payload.baseAddress,
                    Int32(will.qos.rawValue), will.retain, nil)
            }
            try check(rc, "last will")
        }
    }

    func installCallbacks(_ mosq: OpaquePointer) {
        mosquitto_connect_v5_callback_set(mosq) { _, context, rc, flags, properties in
            guard let core = core(context) else { return }
            // MQTT 5 §3.2.2.3.5 Retain Available: absent means 1. libmosquitto then clears the retain flag of every
            // publish by itself, silently; the core counts those.
            var available: UInt8 = 1
            _ = mosquitto_property_read_byte(properties, Int32(MQTT_PROP_RETAIN_AVAILABLE.rawValue), &available, false)
            core.lock.withLock { core.retainAvailable = available != 0 }
            core.noteConnack()
            core.post(.connack(rc: rc, flags: flags))
        }
        mosquitto_disconnect_v5_callback_set(mosq) { _, context, rc, _ in
            guard let core = core(context) else { return }
            core.noteDisconnect()
            let failure = errno
            core.post(.disconnected(rc: rc, errno: failure, detail: core.disconnectDetail(rc)))
        }
        mosquitto_publish_v5_callback_set(mosq) { _, context, mid, reasonCode, _ in
            core(context)?.acknowledge(mid: mid, reasonCode: reasonCode)
        }
        mosquitto_subscribe_v5_callback_set(mosq) { _, context, mid, count, granted, _ in
            // One filter per SUBSCRIBE here, so one return code.
            core(context)?.acknowledgeSubscription(mid: mid, granted: count > 0 ? granted?.pointee : nil)
        }
        mosquitto_message_v5_callback_set(mosq) { _, context, message, properties in
            guard let core = core(context), let message = message?.pointee else { return }
            var expiry: UInt32 = 0
            let hasExpiry =
                mosquitto_property_read_int32(
                    properties, Int32(MQTT_PROP_MESSAGE_EXPIRY_INTERVAL.rawValue),
                    &expiry, false) != nil
            let payload =
                message.payload.map {
                    Array(UnsafeRawBufferPointer(start: $0, count: Int(message.payloadlen)))
                } ?? []
            core.deliver(
                MQTTMessage(
                    topic: String(cString: message.topic), payload: payload,
                    qos: MQTTQoS(rawValue: Int(message.qos)) ?? .atMostOnce, retain: message.retain,
                    messageExpiryInterval: hasExpiry ? expiry : nil))
        }
        mosquitto_log_callback_set(mosq) { _, context, level, line in
            // libmosquitto logs every packet at debug level (two lines per QoS 1 publish): only errors and warnings
            // are kept, so the others are dropped before they become Swift strings.
            guard let line, level & (MOSQ_LOG_ERR | MOSQ_LOG_WARNING) != 0 else { return }
            core(context)?.noteLog(level: level, String(cString: line))
        }
    }
}

/// The context pointer given to `mosquitto_new` back as the core. Unretained: the core outlives the instance.
private func core(_ context: UnsafeMutableRawPointer?) -> MQTTConnectionCore? {
    context.map { Unmanaged<MQTTConnectionCore>.fromOpaque($0).takeUnretainedValue() }
}
