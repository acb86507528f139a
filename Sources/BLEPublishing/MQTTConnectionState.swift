/// The life of `MQTTClient.run()` and of the connection attempt its loop thread is making, as libmosquitto's
/// thread and `run()` report it. Pure: events in, actions out; `MQTTConnectionCore` keeps it under its lock and
/// calls libmosquitto.
///
/// Two observers feed it. libmosquitto's thread knows the socket as it is (dialled, answered, closed); `run()`
/// learns of it later, from the mailbox, and only what it has read decides whether publishes are admitted. So an
/// answered connection is `admitted` only once `run()` has read its accepting CONNACK, and stops being so as soon
/// as `run()` has read its end, even while libmosquitto is still closing the socket.
struct MQTTConnectionState: Sendable {
    enum Run: Sendable, Equatable {
        /// No `run()`.
        case idle
        /// `run()` connects, and reconnects after every end.
        case running(Attempt)
        /// A stop was asked for: the connection ends with DISCONNECT, and no new attempt starts.
        case stopping(Attempt)
    }

    /// One connection, from `startAttempt` to the end of its loop thread.
    enum Attempt: Sendable, Equatable {
        /// No loop thread: before the first attempt, and while `run()` backs off between two.
        case none
        /// The loop thread is in `mosquitto_connect`: TCP, the TLS handshake, CONNECT.
        case dialling(Dialling)
        /// The socket is open and CONNECT sent; no CONNACK yet.
        case awaitingConnack(Open)
        /// The broker answered with a CONNACK; `run()` has not admitted publishes (yet, or any more).
        case answered(Open)
        /// `run()` read an accepting CONNACK: publishes and subscriptions go to the broker.
        case admitted(Open)
        /// libmosquitto's loop returned: the socket is closed and `run()` is about to hear `.loopExited`.
        case closed(answered: Bool, deadlinePassed: Bool)
    }

    struct Dialling: Sendable, Equatable {
        /// The connect deadline passed and shut the socket down.
        var deadlinePassed = false
        /// libmosquitto told of the connection's end (on_disconnect).
        var endTold = false
    }

    struct Open: Sendable, Equatable {
        var deadlinePassed: Bool
        var endTold: Bool
        /// DISCONNECT was handed to libmosquitto (once per connection).
        var disconnectSent = false
    }

    enum Action: Sendable, Equatable {
        /// `mosquitto_disconnect`: the broker then discards the will.
        case sendDisconnect
        /// Shut the socket down: a handshake nothing answers ends with an error instead of waiting for ever.
        case shutDownSocket
    }

    private(set) var run = Run.idle

    var attempt: Attempt {
        get {
            switch run {
            case .idle: .none
            case .running(let a), .stopping(let a): a
            }
        }
        set {
            switch run {
            case .idle: break
            case .running: run = .running(newValue)
            case .stopping: run = .stopping(newValue)
            }
        }
    }

    var isRunning: Bool { run != .idle }

    var isStopRequested: Bool {
        if case .stopping = run { return true }
        return false
    }

    /// Publishes, SUBSCRIBE and UNSUBSCRIBE go to libmosquitto only now.
    var isAdmitted: Bool {
        if case .admitted = attempt { return true }
        return false
    }

    /// From `mosquitto_connect` to the CONNACK: the span the connect deadline cuts short.
    var isConnecting: Bool {
        switch attempt {
        case .dialling, .awaitingConnack: true
        case .none, .answered, .admitted, .closed: false
        }
    }

    /// What the diagnosis of a lost connection needs: whether a CONNACK came, and whether the deadline cut it.
    var facts: (answered: Bool, deadlinePassed: Bool) {
        switch attempt {
        case .none: (false, false)
        case .dialling(let d): (false, d.deadlinePassed)
        case .awaitingConnack(let o): (false, o.deadlinePassed)
        case .answered(let o), .admitted(let o): (true, o.deadlinePassed)
        case .closed(let answered, let deadlinePassed): (answered, deadlinePassed)
        }
    }

    // MARK: run()'s events

    /// `run()` starts; false if one is running already.
    mutating func begin() -> Bool {
        guard run == .idle else { return false }
        run = .running(.none)
        return true
    }

    /// `run()` ended: its loop thread has exited.
    mutating func end() { run = .idle }

    /// A graceful stop: the open connection is ended with DISCONNECT; one still dialling is ended once it opens.
    mutating func requestStop() -> Action? {
        guard case .running(let a) = run else { return nil }
        run = .stopping(a)
        return disconnect()
    }

    /// A new attempt's loop thread is about to start; false once a stop was asked for.
    mutating func startAttempt() -> Bool {
        guard case .running = run else { return false }
        attempt = .dialling(Dialling())
        return true
    }

    /// `run()` read an accepting CONNACK; true when the connection is still there to subscribe on.
    mutating func admit() -> Bool {
        guard case .answered(let o) = attempt else { return false }
        attempt = .admitted(o)
        return true
    }

    /// `run()` read the connection's end.
    mutating func withdraw() {
        if case .admitted(let o) = attempt { attempt = .answered(o) }
    }

    // MARK: libmosquitto's thread's events

    mutating func connectDeadlinePassed() -> Action? {
        switch attempt {
        case .dialling(var d):
            d.deadlinePassed = true
            attempt = .dialling(d)
        case .awaitingConnack(var o):
            o.deadlinePassed = true
            attempt = .awaitingConnack(o)
        case .none, .answered, .admitted, .closed: return nil
        }
        return .shutDownSocket
    }

    /// `mosquitto_connect` returned. Opened: a stop asked for meanwhile is carried out now. Not opened: the attempt
    /// is over.
    mutating func connectReturned(opened: Bool) -> Action? {
        guard case .dialling(let d) = attempt else { return nil }
        guard opened else {
            attempt = .closed(answered: false, deadlinePassed: d.deadlinePassed)
            return nil
        }
        attempt = .awaitingConnack(Open(deadlinePassed: d.deadlinePassed, endTold: d.endTold))
        return isStopRequested ? disconnect() : nil
    }

    mutating func connackReceived() {
        if case .awaitingConnack(let o) = attempt { attempt = .answered(o) }
    }

    /// libmosquitto's on_disconnect.
    mutating func endTold() {
        switch attempt {
        case .dialling(var d):
            d.endTold = true
            attempt = .dialling(d)
        case .awaitingConnack(var o):
            o.endTold = true
            attempt = .awaitingConnack(o)
        case .answered(var o):
            o.endTold = true
            attempt = .answered(o)
        case .admitted(var o):
            o.endTold = true
            attempt = .admitted(o)
        case .none, .closed: break
        }
    }

    /// The loop returned: the socket is closed. Returns whether libmosquitto told of the end itself; a TLS
    /// handshake cut short ends without on_disconnect.
    mutating func loopReturned() -> Bool {
        let told: Bool
        switch attempt {
        case .dialling(let d): told = d.endTold
        case .awaitingConnack(let o), .answered(let o), .admitted(let o): told = o.endTold
        case .none, .closed: told = false
        }
        let (answered, deadlinePassed) = facts
        attempt = .closed(answered: answered, deadlinePassed: deadlinePassed)
        return told
    }

    private mutating func disconnect() -> Action? {
        switch attempt {
        case .awaitingConnack(var o) where !o.disconnectSent:
            o.disconnectSent = true
            attempt = .awaitingConnack(o)
        case .answered(var o) where !o.disconnectSent:
            o.disconnectSent = true
            attempt = .answered(o)
        case .admitted(var o) where !o.disconnectSent:
            o.disconnectSent = true
            attempt = .admitted(o)
        default: return nil
        }
        return .sendDisconnect
    }
}
