import CMosquitto
import Foundation

/// The one owner of the `struct mosquitto *`, and everything libmosquitto's thread and Swift tasks share, behind
/// one lock.
///
/// Threads: libmosquitto runs its network loop on a thread of ours (`mosquitto_threaded_set`, one thread per
/// connection attempt, so libmosquitto's own reconnect logic never runs). Its callbacks arrive on that thread and
/// only hand events over: connection events go into a mailbox that `MQTTClient.run()` drains, acknowledgements
/// resume the waiting `publish`, received messages are yielded to the subscribers' streams. No policy (backoff,
/// resubscribe, failing publishes) runs on libmosquitto's thread.
///
/// Lock order: a libmosquitto callback holds libmosquitto's `callback_mutex` and then takes `lock`. Swift code
/// holds `lock` while it calls `mosquitto_publish_v5`/`subscribe`/`disconnect`, which with
/// `mosquitto_threaded_set(true)` only take libmosquitto's queue mutexes (never `callback_mutex`) and never write
/// to the socket inline (lib/packet_mosq.c `packet__queue`), so the two orders never cross. Holding `lock` across
/// `mosquitto_publish_v5` is what makes acknowledgement exact: the PUBACK callback for a mid cannot run before
/// the mid's continuation is registered.
final class MQTTConnectionCore: @unchecked Sendable {
    /// What libmosquitto's thread reports to `run()`.
    enum LoopEvent: Sendable {
        case connack(rc: Int32, flags: Int32)
        /// `errno` as libmosquitto left it when it failed: MOSQ_ERR_ERRNO means "see errno", and by the time the event
        /// is read another call has overwritten it (it printed "Success").
        case disconnected(rc: Int32, errno: Int32, detail: String?)
        case connectFailed(rc: Int32, errno: Int32, detail: String?)
        case loopExited
    }

    private struct Subscription {
        /// One or more filters feeding one stream: each message that matches any of them is yielded once, in the
        /// order the broker sent it.
        var filters: [String]
        var qos: MQTTQoS
        var continuation: AsyncStream<MQTTMessage>.Continuation
    }

    /// A `struct mosquitto *` handed to the loop thread; only that thread runs the loop on it.
    private struct Handle: @unchecked Sendable { let pointer: OpaquePointer }

    let configuration: MQTTConfiguration
    let lock = NSLock()

    // Guarded by `lock`.
    private var mosq: OpaquePointer?
    var secrets = MQTTSecrets()
    private var state = MQTTConnectionState()
    private var lastLogLine: String?
    /// The broker the current (or last) attempt dialled.
    private var dialled: MQTTConfiguration.Broker
    private var pending: [Int32: @Sendable (Result<MQTTPublishID, MQTTError>) -> Void] = [:]
    private var droppedDeliveries = 0
    /// Retained messages sent unretained because the broker has no retained messages (guarded by `lock`).
    private var unretained = 0
    /// What the last CONNACK said of retained messages (guarded by `lock`).
    var retainAvailable = true
    private var subscriptions: [UInt64: Subscription] = [:]
    private var nextSubscriptionID: UInt64 = 0
    /// SUBSCRIBE packets sent on this connection and not yet acknowledged (message id → filter), the filters the
    /// broker has acknowledged on it, and who waits for one (guarded by `lock`).
    private var subscribeMids: [Int32: String] = [:]
    private var acknowledgedFilters: Set<String> = []
    private var subscribedWaiters: [UInt64: (filter: String, continuation: CheckedContinuation<Void, Never>)] = [:]
    private var nextWaiterID: UInt64 = 0
    private var mailbox: [LoopEvent] = []
    private var mailboxWaiter: CheckedContinuation<LoopEvent, Never>?

    init(configuration: MQTTConfiguration) {
        self.configuration = configuration
        dialled = MQTTConfiguration.Broker(host: configuration.host, port: configuration.port)
        _ = mosquitto_lib_init()
    }

    deinit {
        if let mosq { mosquitto_destroy(mosq) }
        for subscription in subscriptions.values { subscription.continuation.finish() }
    }

    // MARK: run() side

    /// Marks the start of `run()`; only one `run()` at a time.
    func begin(secrets: MQTTSecrets) throws(MQTTError) {
        let began = lock.withLock {
            guard state.begin() else { return false }
            self.secrets = secrets
            return true
        }
        guard began else { throw MQTTError(kind: .invalidArgument, code: 0, name: "run() is already running") }
    }

    /// End of `run()`: the loop thread has exited, so the instance can go.
    func end() {
        lock.withLock {
            if let mosq { mosquitto_destroy(mosq) }
            mosq = nil
            state.end()
            secrets = MQTTSecrets()
            mailbox.removeAll()
        }
    }

    var isStopRequested: Bool { lock.withLock { state.isStopRequested } }

    var inFlightCount: Int { lock.withLock { pending.count } }

    /// Received messages a subscription stream dropped because its reader fell a whole buffer behind.
    var droppedDeliveriesCount: Int { lock.withLock { droppedDeliveries } }
    var unretainedCount: Int { lock.withLock { unretained } }

    /// Graceful stop: sends DISCONNECT (so the broker discards the will) if a socket is open; the loop thread
    /// then exits. If the thread is still inside the blocking connect, it sends DISCONNECT itself afterwards.
    func requestStop() {
        lock.withLock { performLocked(state.requestStop()) }
    }

    /// Carries out what the state asked for (called holding `lock`).
    private func performLocked(_ action: MQTTConnectionState.Action?) {
        guard let action, let mosq else { return }
        switch action {
        case .sendDisconnect: _ = mosquitto_disconnect(mosq)
        case .shutDownSocket:
            let fd = mosquitto_socket(mosq)
            if fd >= 0 { shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    /// Prepares the instance and starts a loop thread that connects and runs until the connection ends.
    /// Returns false when a stop was requested. A clean session gets a fresh libmosquitto instance per
    /// connection, so nothing libmosquitto still holds from the last connection is resent behind the caller's back;
    /// a persistent session keeps it, because MQTT §4.4 requires resending unacknowledged PUBLISH/PUBREL when a
    /// session resumes.
    func startAttempt(to broker: MQTTConfiguration.Broker) throws(MQTTError) -> Bool {
        let started: Result<Handle?, MQTTError> = lock.withLock {
            guard !state.isStopRequested else { return .success(nil) }
            if mosq == nil || configuration.session == .clean {
                if let old = mosq { mosquitto_destroy(old) }
                mosq = nil
                do throws(MQTTError) {
                    mosq = try makeInstanceLocked()
                } catch {
                    return .failure(error)
                }
            }
            guard state.startAttempt(), let mosq else { return .success(nil) }
            dialled = broker
            lastLogLine = nil
            mailbox.removeAll()
            return .success(Handle(pointer: mosq))
        }
        guard let handle = try started.get() else { return false }
        let thread = Thread { [self] in loopThread(handle, broker) }
        thread.name = "mqtt-loop"
        thread.start()
        return true
    }

    /// The next event from libmosquitto's thread. Not cancellable on purpose: `run()` must see `.loopExited`
    /// even while it is being cancelled, so the instance is never destroyed under a running loop.
    func nextLoopEvent() async -> LoopEvent {
        await withCheckedContinuation { (continuation: CheckedContinuation<LoopEvent, Never>) in
            let ready: LoopEvent? = lock.withLock {
                if mailbox.isEmpty {
                    mailboxWaiter = continuation
                    return nil
                }
                return mailbox.removeFirst()
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// CONNACK accepted: publishes are allowed and every subscription is (re)sent.
    func markConnected() {
        lock.withLock {
            // Gone already (the loop thread is ahead of run()): nothing to subscribe on; its end is next in the mailbox.
            guard state.admit(), let mosq else { return }
            var filters: [String: MQTTQoS] = [:]
            for subscription in subscriptions.values {
                for f in subscription.filters { filters[f] = max(filters[f] ?? .atMostOnce, subscription.qos) }
            }
            for (filter, qos) in filters { sendSubscribe(mosq, filter, qos) }
        }
    }

    /// SUBSCRIBE on the current connection, its message id kept for the SUBACK (called holding `lock`).
    private func sendSubscribe(_ mosq: OpaquePointer, _ filter: String, _ qos: MQTTQoS) {
        var mid: Int32 = 0
        if mosquitto_subscribe(mosq, &mid, filter, Int32(qos.rawValue)) == mosqSuccess { subscribeMids[mid] = filter }
    }

    /// SUBACK (MQTT 3.1.1 §3.9, 5.0 §3.9): a code that is no failure grants the subscription; from now on the broker
    /// delivers what matches the filter. Waiters for the filter go on.
    func acknowledgeSubscription(mid: Int32, granted: Int32?) {
        let resumed: [CheckedContinuation<Void, Never>] = lock.withLock {
            guard let filter = subscribeMids.removeValue(forKey: mid), let granted,
                !MQTTReasonCode(rawValue: Int(granted)).isFailure
            else { return [] }
            acknowledgedFilters.insert(filter)
            let due = subscribedWaiters.filter { $0.value.filter == filter }
            for id in due.keys { subscribedWaiters[id] = nil }
            return due.values.map(\.continuation)
        }
        for c in resumed { c.resume() }
    }

    /// Returns once the broker has acknowledged a subscription to `filter` on the current connection (at once if it
    /// has), or when the caller is cancelled.
    func subscribed(_ filter: String) async {
        let id: UInt64 = lock.withLock {
            nextWaiterID += 1
            return nextWaiterID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now: Bool = lock.withLock {
                    if acknowledgedFilters.contains(filter) || Task.isCancelled { return true }
                    subscribedWaiters[id] = (filter, continuation)
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            lock.withLock { subscribedWaiters.removeValue(forKey: id) }?.continuation.resume()
        }
    }

    /// The connection ended: every publish still waiting fails with `.notAcknowledged`. Returns how many.
    @discardableResult
    func markDisconnected() -> Int {
        let failed: [@Sendable (Result<MQTTPublishID, MQTTError>) -> Void] = lock.withLock {
            state.withdraw()
            // A new connection subscribes again, and is acknowledged again.
            subscribeMids.removeAll()
            acknowledgedFilters.removeAll()
            defer { pending.removeAll() }
            return Array(pending.values)
        }
        for completion in failed { completion(.failure(MQTTError.notAcknowledged)) }
        return failed.count
    }

    // MARK: caller side

    func publish(_ message: MQTTMessage) async throws -> MQTTPublishID {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<MQTTPublishID, any Error>) in
            submit(message) { continuation.resume(with: $0.mapError { $0 as any Error }) }
        }
    }

    /// Hands `message` to libmosquitto now, on the caller's thread, so messages submitted one after another go
    /// on the wire in that order; `completion` runs once: on the acknowledgement (or the socket write for
    /// QoS 0), or with the error. It never runs before `submit` has registered it.
    func submit(_ message: MQTTMessage, completion: @escaping @Sendable (Result<MQTTPublishID, MQTTError>) -> Void) {
        var properties: OpaquePointer?
        if configuration.protocolVersion == .v5, let expiry = message.messageExpiryInterval {
            _ = mosquitto_property_add_int32(&properties, Int32(MQTT_PROP_MESSAGE_EXPIRY_INTERVAL.rawValue), expiry)
        }
        defer { mosquitto_property_free_all(&properties) }
        let limit = configuration.maxInFlight
        // Registered under the same hold of `lock` as the PUBLISH is handed over; the completion of a refusal runs
        // after the lock is let go.
        let refusal: MQTTError? = lock.withLock {
            guard state.isAdmitted, let mosq else { return MQTTError.notConnected }
            guard pending.count < limit else { return MQTTError.windowFull(limit) }
            var mid: Int32 = 0
            func send(retain: Bool) -> Int32 {
                message.payload.withUnsafeBytes { payload in
                    mosquitto_publish_v5(
                        mosq, &mid, message.topic, Int32(payload.count), payload.baseAddress,
                        Int32(message.qos.rawValue), retain, properties)
                }
            }
            // The broker's CONNACK said Retain Available = 0: it keeps no retained message, so a state goes to those
            // subscribed now, unretained, rather than nowhere (libmosquitto clears the flag; newer ones may refuse).
            if message.retain && !retainAvailable { unretained += 1 }
            var rc = send(retain: message.retain && retainAvailable)
            if rc == Int32(MOSQ_ERR_RETAIN_NOT_SUPPORTED.rawValue) { rc = send(retain: false) }
            guard rc == mosqSuccess else {
                // The socket closed before run() heard of it: to the caller that is "not connected", retry later.
                let lost = rc == Int32(MOSQ_ERR_NO_CONN.rawValue) || rc == Int32(MOSQ_ERR_CONN_LOST.rawValue)
                return lost ? MQTTError.notConnected : MQTTError.library(rc)
            }
            pending[mid] = completion
            return nil
        }
        if let refusal { completion(.failure(refusal)) }
    }

    func subscribe(_ filters: [String], qos: MQTTQoS, buffer: Int) throws(MQTTError) -> AsyncStream<MQTTMessage> {
        precondition(!filters.isEmpty, "a subscription needs a filter")
        for filter in filters {
            let rc = mosquitto_sub_topic_check(filter)
            guard rc == mosqSuccess else { throw MQTTError.library(rc, detail: "topic filter \"\(filter)\"") }
        }
        let (stream, continuation) = AsyncStream.makeStream(
            of: MQTTMessage.self,
            bufferingPolicy: .bufferingNewest(buffer))
        let id: UInt64 = lock.withLock {
            nextSubscriptionID += 1
            subscriptions[nextSubscriptionID] = Subscription(filters: filters, qos: qos, continuation: continuation)
            if state.isAdmitted, let mosq { for filter in filters { sendSubscribe(mosq, filter, qos) } }
            return nextSubscriptionID
        }
        continuation.onTermination = { [weak self] _ in self?.unsubscribe(id) }
        return stream
    }

    private func unsubscribe(_ id: UInt64) {
        lock.withLock {
            guard let removed = subscriptions.removeValue(forKey: id) else { return }
            for filter in removed.filters where !subscriptions.values.contains(where: { $0.filters.contains(filter) }) {
                acknowledgedFilters.remove(filter)
                if state.isAdmitted, let mosq { _ = mosquitto_unsubscribe(mosq, nil, filter) }
            }
        }
    }

    // MARK: libmosquitto's thread

    private func loopThread(_ handle: Handle, _ broker: MQTTConfiguration.Broker) {
        let mosq = handle.pointer
        var properties: OpaquePointer?
        if configuration.protocolVersion == .v5, case .persistent(let expiry) = configuration.session {
            let seconds = UInt32(clamping: Int64(expiry.seconds.rounded()))
            _ = mosquitto_property_add_int32(&properties, Int32(MQTT_PROP_SESSION_EXPIRY_INTERVAL.rawValue), seconds)
        }
        let keepAlive = Int32(clamping: Int64(configuration.keepAlive.seconds.rounded()))
        // Blocking connect (TCP, then the TLS handshake, which libmosquitto may finish in its loop) on this thread,
        // never on a Swift executor. A handshake nothing answers (TLS to a plaintext port) would wait for ever: when
        // no CONNACK came by the deadline the socket is shut down, which ends the connection with an error.
        let deadline = DispatchWorkItem { [weak self] in self?.connectDeadlinePassed() }
        DispatchQueue.global().asyncAfter(
            deadline: .now() + configuration.connectTimeout.seconds,
            execute: deadline)
        let rc = mosquitto_connect_bind_v5(
            mosq, broker.host, Int32(broker.port), keepAlive, nil,
            properties)
        let connectErrno = errno
        let timedOut = lock.withLock {
            performLocked(state.connectReturned(opened: rc == mosqSuccess))
            return state.facts.deadlinePassed
        }
        mosquitto_property_free_all(&properties)
        if rc != mosqSuccess {
            deadline.cancel()
            var detail = takeLastLogLine()
            if timedOut { detail = Self.joined("no answer within \(configuration.connectTimeout)", detail) }
            if configuration.tls != nil, let why = diagnose() { detail = Self.joined(detail, why) }
            post(.connectFailed(rc: rc, errno: connectErrno, detail: detail))
            post(.loopExited)
            return
        }
        // Until the socket closes: an error, the broker leaving, or our DISCONNECT written. libmosquitto calls
        // on_disconnect before mosquitto_loop returns the error.
        // The socket check guards builds with SRV support, whose mosquitto_loop does not return NO_CONN once the
        // socket is gone (lib/loop.c).
        //
        // The loop waits up to one keep-alive interval: libmosquitto shortens each wait to the next PINGREQ it owes
        // (`next_msg_out`, lib/loop.c), and a publish or subscribe from another thread wakes it through its socket
        // pair, so nothing needs its one-second default, which woke every idle gateway once a second (issue #42).
        let loopTimeout = keepAlive > 0 ? keepAlive * 1000 : 1000
        var loopResult = mosqSuccess
        repeat {
            loopResult = mosquitto_loop(mosq, loopTimeout, 1)
        } while loopResult == mosqSuccess && mosquitto_socket(mosq) != -1
        let loopErrno = errno
        let told = lock.withLock { state.loopReturned() }
        deadline.cancel()
        // The broker closed the socket during the TLS handshake (a TLS client on a plaintext port): libmosquitto
        // says nothing, so the failure is told here, with its diagnosis.
        if !told {
            let rc = loopResult == mosqSuccess ? Int32(MOSQ_ERR_CONN_LOST.rawValue) : loopResult
            post(.disconnected(rc: rc, errno: loopErrno, detail: disconnectDetail(rc)))
        }
        post(.loopExited)
    }

    func post(_ event: LoopEvent) {
        let waiter: CheckedContinuation<LoopEvent, Never>? = lock.withLock {
            guard let waiter = mailboxWaiter else {
                mailbox.append(event)
                return nil
            }
            mailboxWaiter = nil
            return waiter
        }
        waiter?.resume(returning: event)
    }

    func acknowledge(mid: Int32, reasonCode: Int32) {
        // Unknown mids are publishes already failed by a disconnect and resent by libmosquitto in a resumed
        // session; their callers were told "not acknowledged" and will publish again.
        guard let completion = lock.withLock({ pending.removeValue(forKey: mid) }) else { return }
        if MQTTReasonCode(rawValue: Int(reasonCode)).isFailure {
            completion(.failure(MQTTError.reason(reasonCode)))
        } else {
            completion(.success(MQTTPublishID(rawValue: mid)))
        }
    }

    func deliver(_ message: MQTTMessage) {
        let targets: [AsyncStream<MQTTMessage>.Continuation] = lock.withLock {
            subscriptions.values.compactMap { subscription in
                let matches = subscription.filters.contains { filter in
                    var matches = false
                    _ = mosquitto_topic_matches_sub(filter, message.topic, &matches)
                    return matches
                }
                return matches ? subscription.continuation : nil
            }
        }
        var dropped = 0
        for target in targets {
            // The stream keeps the newest `buffer` unread messages; a subscriber that falls behind loses the oldest.
            if case .dropped = target.yield(message) { dropped += 1 }
        }
        if dropped > 0 { lock.withLock { droppedDeliveries += dropped } }
    }

    func noteLog(level: Int32, _ line: String) {
        guard level & (MOSQ_LOG_ERR | MOSQ_LOG_WARNING) != 0 else { return }
        lock.withLock { lastLogLine = line }
    }

    private func takeLastLogLine() -> String? {
        lock.withLock {
            defer { lastLogLine = nil }
            return lastLogLine
        }
    }

    func lastLog() -> String? { lock.withLock { lastLogLine } }

    /// The system's trusted CA certificates, hashed (Debian's ca-certificates).
    static let systemCADirectory = "/etc/ssl/certs"

    private func connectDeadlinePassed() {
        lock.withLock { performLocked(state.connectDeadlinePassed()) }
    }

    /// What a lost connection's event says: libmosquitto's last log line, and when it was lost before any CONNACK,
    /// the TLS diagnosis (a plaintext client on a TLS port, a client certificate the broker refused).
    func disconnectDetail(_ rc: Int32) -> String? {
        let (log, facts) = lock.withLock { (lastLogLine, state.facts) }
        let (answered, timedOut) = (facts.answered, facts.deadlinePassed)
        guard rc != mosqSuccess, !answered else { return log }
        let waited = timedOut ? "no CONNACK within \(configuration.connectTimeout)" : nil
        return Self.joined(Self.joined(waited, log), diagnose())
    }

    func noteDisconnect() { lock.withLock { state.endTold() } }

    func noteConnack() {
        lock.withLock { state.connackReceived() }
    }

    private func diagnose() -> String? {
        let (broker, passphrase) = lock.withLock { (dialled, secrets.keyPassphrase) }
        return TLSDiagnosis.explain(
            host: broker.host, port: broker.port, tls: configuration.tls, keyPassphrase: passphrase)
    }

    private static func joined(_ a: String?, _ b: String?) -> String? {
        let parts = [a, b].compactMap { $0 }
        return parts.isEmpty ? nil : parts.joined(separator: "; ")
    }

    func copyPassphrase(into buffer: UnsafeMutablePointer<CChar>, size: Int32) -> Int32 {
        lock.withLock {
            guard let passphrase = secrets.keyPassphrase, passphrase.count < Int(size) else { return 0 }
            for (i, byte) in passphrase.enumerated() { buffer[i] = CChar(bitPattern: byte) }
            buffer[passphrase.count] = 0
            return Int32(passphrase.count)
        }
    }
}

let mosqSuccess = Int32(MOSQ_ERR_SUCCESS.rawValue)
