import BLETransport

/// The client side of one ATT bearer, as a state machine: events in (a request to send, a PDU received,
/// the time, the bearer's end), actions out (PDUs to send, requests to complete or fail, values to
/// deliver, the bearer to drop). It does no I/O and reads no clock; `GATTClient` drives it.
///
/// The rules it keeps (Core v5.4, Vol 3, Part F):
/// - §3.3.2 Sequential protocol: "Once a client sends a request to a server, that client shall send no other
///   request to the same server on the same ATT bearer until it has received the response PDU". Later
///   requests wait in a queue, in order.
/// - §3.3.3 Transaction: "A transaction not completed within 30 seconds shall time out. Such a transaction
///   shall be considered to have failed and the local higher layers shall be informed of this failure. No
///   more attribute protocol requests, commands, indications or notifications shall be sent to the target
///   device on this ATT bearer." So a timeout drops the bearer and fails every waiting request.
/// - §3.4.2: ATT_MTU is the smaller of the Client Rx MTU and the Server Rx MTU; a Server Rx MTU below the
///   default 23 is not valid, is counted, and taken as 23.
/// - §3.4.7.2: "The client shall send a Handle Value Confirmation PDU in response to a Handle Value
///   Indication PDU" and §3.3.2: "a server … shall not send … another Handle Value Indication PDU …
///   until it has received" the confirmation — a second indication while one is unconfirmed is counted
///   and ignored.
/// - A response that matches no outstanding request, or an Error Response naming another request opcode,
///   is a protocol error: counted and ignored. The outstanding request then waits for its own answer or
///   for the timeout, which is the spec's remedy for a peer that does not answer.
public struct ATTClientCore: Sendable {
    public typealias RequestID = UInt64

    /// How a request ended when it did not get its response.
    public enum Failure: Error, Hashable, Sendable {
        /// The server answered with an Error Response for this request.
        case errorResponse(ATTErrorResponse)
        /// The transaction (this one, or the one before it on the bearer) timed out (§3.3.3).
        case timeout(ATTOpcode)
        /// The bearer ended (or was dropped) before the response came.
        case linkClosed
        /// The response PDU was malformed (only for the responses the core itself reads: Exchange MTU).
        case malformed(ATTPDUError)
    }

    public enum Action: Hashable, Sendable {
        /// Send this PDU on the bearer.
        case send([UInt8])
        /// The request got its response (the whole PDU, opcode first).
        case complete(RequestID, [UInt8])
        case fail(RequestID, Failure)
        case notification(ATTHandleValue)
        /// Deliver, then call `confirmIndication()` to send the confirmation.
        case indication(ATTHandleValue)
        /// §3.3.3: the transaction timed out; end the bearer.
        case dropBearer
    }

    public struct Counters: Hashable, Sendable {
        public var requestsSent = 0
        public var responses = 0
        public var errorResponses = 0
        public var notifications = 0
        public var indications = 0
        public var timeouts = 0
        /// A response or confirmation with no request outstanding, or for another request.
        public var unexpectedResponses = 0
        /// An Error Response whose Request Opcode In Error is not the outstanding request's.
        public var mismatchedErrorResponses = 0
        /// A Handle Value Indication while the previous one is still unconfirmed (§3.3.2).
        public var indicationsWhileUnconfirmed = 0
        /// Exchange MTU Responses with a Server Rx MTU below 23, taken as 23 (§3.4.2.2).
        public var serverMTUBelowMinimum = 0
        /// PDUs too short for their layout, or empty.
        public var malformedPDUs = 0
        /// Requests the server sent this client (which has no attributes), answered Request Not Supported.
        public var serverRequestsRejected = 0

        public init() {}

        /// Everything the peer did against the protocol.
        public var protocolErrors: Int {
            unexpectedResponses + mismatchedErrorResponses + indicationsWhileUnconfirmed + malformedPDUs
        }
    }

    struct Outstanding: Sendable {
        var id: RequestID
        var opcode: ATTOpcode
        var response: ATTOpcode
        var deadline: Duration
        var pdu: [UInt8]
    }

    public let timeout: Duration
    /// The current ATT_MTU (§3.2.8): 23 until an Exchange MTU completes.
    public private(set) var mtu: Int = ATTPDU.minimumMTU
    /// True once the MTU has been exchanged (§3.4.2.1: the request "shall only be sent once" per connection).
    public private(set) var mtuExchanged = false
    public private(set) var counters = Counters()
    /// Set when the bearer ended or was dropped; every request fails from then on.
    public private(set) var isClosed = false
    private var outstanding: Outstanding?
    private var queue: [(id: RequestID, pdu: [UInt8])] = []
    private var unconfirmedIndication = false

    public init(timeout: Duration = .seconds(30)) { self.timeout = timeout }

    /// When the outstanding transaction times out; nil when none is outstanding.
    public var deadline: Duration? { outstanding?.deadline }
    /// Requests not yet answered, the outstanding one included.
    public var waitingCount: Int { queue.count + (outstanding == nil ? 0 : 1) }
    /// The outstanding request's opcode.
    public var outstandingOpcode: ATTOpcode? { outstanding?.opcode }

    /// A request PDU (one whose opcode has a response, §3.4.8): sent now when the bearer is idle, else queued.
    public mutating func request(_ id: RequestID, _ pdu: [UInt8], now: Duration) -> [Action] {
        precondition(pdu.first.flatMap { ATTOpcode($0).expectedResponse } != nil, "not an ATT request")
        if isClosed { return [.fail(id, .linkClosed)] }
        queue.append((id, pdu))
        return outstanding == nil ? startNext(now: now) : []
    }

    /// A command (no response, §3.3.1 bit 6): sent at once, beside any outstanding request. Nothing when closed.
    public mutating func command(_ pdu: [UInt8]) -> [Action] {
        isClosed ? [] : [.send(pdu)]
    }

    /// The confirmation of the indication last delivered (§3.4.7.3).
    public mutating func confirmIndication() -> [Action] {
        guard unconfirmedIndication else { return [] }
        unconfirmedIndication = false
        return isClosed ? [] : [.send(ATTPDU.handleValueConfirmation)]
    }

    /// A PDU from the server.
    public mutating func receive(_ pdu: [UInt8], now: Duration) -> [Action] {
        guard !isClosed else { return [] }
        guard let first = pdu.first else {
            counters.malformedPDUs += 1
            return []
        }
        let op = ATTOpcode(first)
        switch op {
        case .errorResponse:
            guard let error = try? ATTErrorResponse.decode(pdu) else {
                counters.malformedPDUs += 1
                return []
            }
            guard let current = outstanding else {
                counters.unexpectedResponses += 1
                return []
            }
            guard error.requestOpcode == current.opcode else {
                counters.mismatchedErrorResponses += 1
                return []
            }
            counters.errorResponses += 1
            outstanding = nil
            return [.fail(current.id, .errorResponse(error))] + startNext(now: now)
        case .handleValueNotification:
            guard let value = try? ATTPDU.decodeHandleValue(pdu, op) else {
                counters.malformedPDUs += 1
                return []
            }
            counters.notifications += 1
            return [.notification(value)]
        case .handleValueIndication:
            guard let value = try? ATTPDU.decodeHandleValue(pdu, op) else {
                counters.malformedPDUs += 1
                return []
            }
            guard !unconfirmedIndication else {
                counters.indicationsWhileUnconfirmed += 1
                return []
            }
            counters.indications += 1
            unconfirmedIndication = true
            return [.indication(value)]
        default:
            if op.isResponse || op == .handleValueConfirmation {
                guard let current = outstanding, current.response == op else {
                    counters.unexpectedResponses += 1
                    return []
                }
                outstanding = nil
                counters.responses += 1
                var done: [Action]
                if op == .exchangeMTUResponse {
                    done = [exchangedMTU(current, pdu)]
                } else {
                    done = [.complete(current.id, pdu)]
                }
                done += startNext(now: now)
                return done
            }
            if op.isCommand { return [] }  // §3.4.8: commands the receiver does not support are ignored
            // A request to this client, which serves no attributes: §3.4.1.1 "Request Not Supported".
            counters.serverRequestsRejected += 1
            return [.send(ATTErrorResponse(requestOpcode: op, handle: 0, code: .requestNotSupported).pdu)]
        }
    }

    /// The time now; times the outstanding transaction out when its 30 s are up.
    public mutating func tick(now: Duration) -> [Action] {
        guard !isClosed, let current = outstanding, now >= current.deadline else { return [] }
        counters.timeouts += 1
        isClosed = true
        outstanding = nil
        var actions: [Action] = [.dropBearer, .fail(current.id, .timeout(current.opcode))]
        for waiting in queue { actions.append(.fail(waiting.id, .timeout(current.opcode))) }
        queue.removeAll()
        return actions
    }

    /// The bearer ended: every waiting request fails.
    public mutating func bearerClosed() -> [Action] {
        guard !isClosed else { return [] }
        isClosed = true
        var actions: [Action] = []
        if let current = outstanding { actions.append(.fail(current.id, .linkClosed)) }
        for waiting in queue { actions.append(.fail(waiting.id, .linkClosed)) }
        outstanding = nil
        queue.removeAll()
        return actions
    }

    private mutating func startNext(now: Duration) -> [Action] {
        guard outstanding == nil, !queue.isEmpty else { return [] }
        let next = queue.removeFirst()
        let op = ATTOpcode(next.pdu[0])
        outstanding = Outstanding(
            id: next.id, opcode: op, response: op.expectedResponse!,
            deadline: now + timeout, pdu: next.pdu)
        counters.requestsSent += 1
        return [.send(next.pdu)]
    }

    /// §3.4.2.2: "ATT_MTU shall be set to the minimum of the Client Rx MTU and the Server Rx MTU";
    /// a Server Rx MTU below the default ATT_MTU is invalid and the default applies.
    private mutating func exchangedMTU(_ request: Outstanding, _ pdu: [UInt8]) -> Action {
        let server: UInt16
        do {
            server = try ATTPDU.decodeExchangeMTUResponse(pdu)
        } catch {
            counters.malformedPDUs += 1
            return .fail(request.id, .malformed(error))
        }
        var c = ByteCursor(request.pdu.dropFirst())
        let client = Int(c.readLE16() ?? UInt16(ATTPDU.minimumMTU))
        var serverMTU = Int(server)
        if serverMTU < ATTPDU.minimumMTU {
            counters.serverMTUBelowMinimum += 1
            serverMTU = ATTPDU.minimumMTU
        }
        mtu = max(ATTPDU.minimumMTU, min(client, serverMTU))
        mtuExchanged = true
        return .complete(request.id, pdu)
    }
}
