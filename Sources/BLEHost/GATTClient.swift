import BLEHCI
import BLETransport
import Logging

/// The GATT client of one connected peripheral (Core v5.4, Vol 3, Part G, §4), over any `ATTBearer`.
///
/// `run()` is its one service loop: it reads the bearer and times transactions out. The procedures
/// (`exchangeMTU`, `discoverAll`, `read`, `write`, `subscribe`) may be called from any task while `run()`
/// runs; they are serialised onto the bearer by `ATTClientCore` (one request outstanding, §3.3.2 of Part F).
/// A caller that is cancelled still waits for its answer: ATT has no way to withdraw a request.
public final class GATTClient: @unchecked Sendable {
    public struct Statistics: Hashable, Sendable {
        public var att = ATTClientCore.Counters()
        /// Events dropped because the consumer of `events` fell behind.
        public var droppedEvents = 0
        public var serviceChanges = 0
        /// Requests sent and not yet answered, plus those queued behind them.
        public var waitingRequests = 0
    }

    public let bearer: any ATTBearer
    /// Notifications, indications and Service Changed, in arrival order; finishes when `run()` ends.
    /// Bounded: beyond `eventBufferSize` the oldest are dropped (and counted); the reader never waits.
    public let events: AsyncStream<GATTClientEvent>
    private let eventContinuation: AsyncStream<GATTClientEvent>.Continuation
    private let clock: any BLEClock
    private let logger: Logger
    private let requestTimeout: Duration
    private let state: Locked<State>

    typealias Waiter = CheckedContinuation<[UInt8], any Error>

    struct State: @unchecked Sendable {  // continuations are Sendable; the box is only touched under the lock
        var core: ATTClientCore
        var nextID: ATTClientCore.RequestID = 0
        var waiters: [ATTClientCore.RequestID: Waiter] = [:]
        var droppedEvents = 0
        var serviceChanges = 0
        var serviceChangedHandle: UInt16?
        /// The request whose transaction timed out, once one has.
        var timedOut: ATTOpcode?
    }

    public init(
        bearer: any ATTBearer, clock: any BLEClock, requestTimeout: Duration = .seconds(30),
        eventBufferSize: Int = 256, logger: Logger = Logger(label: "ble.host.gatt")
    ) {
        self.bearer = bearer
        self.clock = clock
        self.requestTimeout = requestTimeout
        self.logger = logger
        self.state = Locked(State(core: ATTClientCore(timeout: requestTimeout)))
        (events, eventContinuation) = AsyncStream.makeStream(
            of: GATTClientEvent.self, bufferingPolicy: .bufferingNewest(eventBufferSize))
    }

    /// The current ATT_MTU.
    public var mtu: Int { state.withLock { $0.core.mtu } }

    public var statistics: Statistics {
        state.withLock {
            Statistics(
                att: $0.core.counters, droppedEvents: $0.droppedEvents, serviceChanges: $0.serviceChanges,
                waitingRequests: $0.core.waitingCount)
        }
    }

    /// Reads the bearer and times transactions out; call it once per client (one client per bearer). Returns when the bearer's `incoming` ends (every
    /// waiting request then fails with `linkClosed`); on a transaction timeout drops the bearer, fails every
    /// waiting request and throws `GATTClientError.timeout`. Finishes `events` either way.
    public func run() async throws {
        defer { eventContinuation.finish() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { [self] in
                for await pdu in bearer.incoming {
                    let now = clock.now()
                    step { $0.core.receive(pdu, now: now) }
                }
                step { $0.core.bearerClosed() }
            }
            group.addTask { [self] in try await expireTransactions() }
            try await group.next()
            group.cancelAll()
        }
        // Dropping the bearer also ends `incoming`, so the reader may finish before the timer's error is seen.
        if let expired = state.withLock({ $0.timedOut }) { throw GATTClientError.timeout(request: expired) }
    }

    /// Sleeps until the outstanding transaction's deadline and ticks the core. Every deadline is "start +
    /// timeout", so while idle, sleeping one timeout ahead can never overshoot a transaction started meanwhile.
    private func expireTransactions() async throws {
        while true {
            let (closed, deadline) = state.withLock { ($0.core.isClosed, $0.core.deadline) }
            if closed { return }
            try await clock.sleep(until: deadline ?? clock.now() + requestTimeout)
            let now = clock.now()
            var expired: ATTOpcode?
            step { s in
                expired = s.core.outstandingOpcode
                let actions = s.core.tick(now: now)
                if !actions.contains(.dropBearer) { expired = nil }
                s.timedOut = expired
                return actions
            }
            if let expired {
                logger.warning(
                    "ATT transaction timed out; bearer dropped",
                    metadata: ["request": "\(expired)", "timeout": "\(requestTimeout)"])
                throw GATTClientError.timeout(request: expired)
            }
        }
    }

    // MARK: Procedures

    /// Exchange MTU (Part G, §4.3.1). Returns the resulting ATT_MTU; once exchanged, returns it without asking
    /// again (Part F, §3.4.2.1: the request "shall only be sent once during a connection by the client").
    @discardableResult
    public func exchangeMTU(_ clientRxMTU: UInt16 = 247) async throws -> Int {
        if let done = state.withLock({ $0.core.mtuExchanged ? $0.core.mtu : nil }) { return done }
        _ = try await transact(ATTPDU.exchangeMTURequest(clientRxMTU: max(clientRxMTU, UInt16(ATTPDU.minimumMTU))))
        return mtu
    }

    /// Discovers every primary service (Part G, §4.4.1), its characteristics (§4.6.1) and their descriptors
    /// (§4.7.1). Remembers the Service Changed characteristic, so its indications become `.serviceChanged`.
    public func discoverAll() async throws -> GATTDatabase {
        var services = try await discoverPrimaryServices()
        for i in services.indices {
            services[i].characteristics = try await discoverCharacteristics(of: services[i])
        }
        let database = GATTDatabase(services: services)
        let serviceChanged = database.characteristic(GATTUUID.serviceChanged)?.valueHandle
        state.withLock { $0.serviceChangedHandle = serviceChanged }
        return database
    }

    /// Read Characteristic Value (§4.8.1), then Read Long Characteristic Values (§4.8.3) while a part fills
    /// the ATT_MTU: a Read Response of ATT_MTU - 1 octets may have been cut short (Part F, §3.4.4.4).
    public func read(_ handle: UInt16) async throws -> [UInt8] {
        let first = try await transact(ATTPDU.readRequest(handle: handle))
        var value = try decoded(.readRequest) { try ATTPDU.decodeReadResponse(first) }
        var part = value.count
        while part == mtu - 1, value.count < ATTPDU.maximumValueLength {
            let offset = UInt16(value.count)
            let next: [UInt8]
            do {
                let pdu = try await transact(ATTPDU.readBlobRequest(handle: handle, offset: offset))
                next = try decoded(.readBlobRequest) { try ATTPDU.decodeReadBlobResponse(pdu) }
            } catch let error as GATTClientError
                where error.attErrorCode == .attributeNotLong || error.attErrorCode == .invalidOffset
            {
                break  // the value was exactly ATT_MTU - 1 long (§3.4.4.5)
            }
            value += next
            part = next.count
        }
        return value
    }

    /// Write Characteristic Value (§4.9.3): a Write Request, answered by a Write Response.
    public func write(_ handle: UInt16, _ value: [UInt8]) async throws {
        try checkLength(value)
        let response = try await transact(ATTPDU.writeRequest(handle: handle, value: value))
        try decoded(.writeRequest) { try ATTPDU.decodeWriteResponse(response) }
    }

    /// Write Without Response (§4.9.1): a Write Command, sent at once, beside any outstanding request.
    public func writeWithoutResponse(_ handle: UInt16, _ value: [UInt8]) throws {
        try checkLength(value)
        let actions = state.withLock { $0.core.command(ATTPDU.writeCommand(handle: handle, value: value)) }
        guard let action = actions.first, case .send(let pdu) = action else { throw GATTClientError.linkClosed }
        do { try bearer.send(pdu) } catch {
            step { $0.core.bearerClosed() }
            throw GATTClientError.linkClosed
        }
    }

    /// Enables notifications (0x0001) or indications (0x0002) by writing the characteristic's Client
    /// Characteristic Configuration descriptor (Part G, §3.3.3.3, §4.10, §4.11).
    public func subscribe(_ characteristic: GATTCharacteristic, indicate: Bool) async throws {
        let needed: GATTCharacteristicProperties = indicate ? .indicate : .notify
        guard characteristic.properties.contains(needed) else {
            throw GATTClientError.propertyMissing(needed, characteristic: characteristic.valueHandle)
        }
        guard let cccd = characteristic.cccdHandle else {
            throw GATTClientError.noCCCD(characteristic: characteristic.valueHandle)
        }
        try await write(cccd, indicate ? [0x02, 0x00] : [0x01, 0x00])
    }

    /// Disables both notifications and indications (CCCD 0x0000).
    public func unsubscribe(_ characteristic: GATTCharacteristic) async throws {
        guard let cccd = characteristic.cccdHandle else {
            throw GATTClientError.noCCCD(characteristic: characteristic.valueHandle)
        }
        try await write(cccd, [0x00, 0x00])
    }

    // MARK: Discovery steps

    /// Discover All Primary Services (§4.4.1): Read By Group Type over 0x0001–0xFFFF for «Primary Service»,
    /// continuing after the last End Group Handle until Attribute Not Found or 0xFFFF.
    private func discoverPrimaryServices() async throws -> [GATTService] {
        var services: [GATTService] = []
        var start: UInt16 = 0x0001
        let op = ATTOpcode.readByGroupTypeRequest
        while true {
            let request = ATTPDU.readByGroupTypeRequest(start: start, end: 0xFFFF, type: GATTUUID.primaryService)
            guard let pdu = try await transactUntilNotFound(request) else { break }
            let range = start...0xFFFF
            let groups = try decoded(op) { try ATTPDU.decodeReadByGroupTypeResponse(pdu, range: range) }
            for group in groups {
                guard let uuid = uuidValue(group.value) else {
                    throw GATTClientError.malformedResponse(
                        .unsupportedEntryLength(.readByGroupTypeResponse, length: group.value.count + 4), request: op)
                }
                services.append(GATTService(uuid: uuid, startHandle: group.handle, endHandle: group.endGroupHandle))
            }
            let last = groups[groups.count - 1].endGroupHandle
            if last == 0xFFFF { break }
            start = last + 1
        }
        return services
    }

    /// Discover All Characteristics of a Service (§4.6.1): Read By Type for «Characteristic» over the service's
    /// range. Each declaration's value is Properties (1) | Value Handle (2) | UUID (2 or 16) (§3.3.1).
    private func discoverCharacteristics(of service: GATTService) async throws -> [GATTCharacteristic] {
        var found: [GATTCharacteristic] = []
        var start = service.startHandle
        let op = ATTOpcode.readByTypeRequest
        let serviceRange = service.startHandle...service.endHandle
        while start <= service.endHandle {
            let request = ATTPDU.readByTypeRequest(start: start, end: service.endHandle, type: GATTUUID.characteristic)
            guard let pdu = try await transactUntilNotFound(request) else { break }
            let range = start...service.endHandle
            let entries = try decoded(op) { try ATTPDU.decodeReadByTypeResponse(pdu, range: range) }
            for entry in entries {
                found.append(try decoded(op) { try Self.declaration(entry, in: serviceRange) })
            }
            let last = entries[entries.count - 1].handle
            if last >= service.endHandle { break }
            start = last + 1
        }
        // A characteristic ends before the next declaration, or with its service (§4.7.1).
        for i in found.indices {
            found[i].endHandle = i + 1 < found.count ? found[i + 1].declarationHandle - 1 : service.endHandle
            if found[i].valueHandle >= found[i].endHandle { continue }
            found[i].descriptors = try await discoverDescriptors(found[i].valueHandle + 1...found[i].endHandle)
        }
        return found
    }

    /// Parses one characteristic declaration and checks its value handle lies after it, inside the service.
    static func declaration(_ entry: ATTHandleValue, in service: ClosedRange<UInt16>)
        throws(ATTPDUError) -> GATTCharacteristic
    {
        var c = ByteCursor(entry.value)
        guard entry.value.count == 5 || entry.value.count == 19, let props = c.readU8(), let valueHandle = c.readLE16(),
            let uuid = ATTPDU.uuid(c.readRest())
        else { throw .unsupportedEntryLength(.readByTypeResponse, length: entry.value.count + 2) }
        guard valueHandle > entry.handle, service.contains(valueHandle) else {
            throw .valueHandleOutsideService(declaration: entry.handle, valueHandle: valueHandle, service: service)
        }
        return GATTCharacteristic(
            uuid: uuid, declarationHandle: entry.handle, valueHandle: valueHandle,
            endHandle: valueHandle, properties: GATTCharacteristicProperties(rawValue: props))
    }

    /// Discover All Characteristic Descriptors (§4.7.1): Find Information over the range after the value.
    private func discoverDescriptors(_ range: ClosedRange<UInt16>) async throws -> [GATTDescriptor] {
        var found: [GATTDescriptor] = []
        var start = range.lowerBound
        while start <= range.upperBound {
            let request = ATTPDU.findInformationRequest(start: start, end: range.upperBound)
            guard let pdu = try await transactUntilNotFound(request) else { break }
            let asked = start...range.upperBound
            let pairs = try decoded(.findInformationRequest) {
                try ATTPDU.decodeFindInformationResponse(pdu, range: asked)
            }
            found += pairs.map { GATTDescriptor(handle: $0.handle, uuid: $0.uuid) }
            let last = pairs[pairs.count - 1].handle
            if last >= range.upperBound { break }
            start = last + 1
        }
        return found
    }

    // MARK: Plumbing

    private func uuidValue(_ bytes: [UInt8]) -> BluetoothUUID? {
        bytes.count == 2 || bytes.count == 16 ? ATTPDU.uuid(bytes[...]) : nil
    }

    private func checkLength(_ value: [UInt8]) throws {
        let limit = mtu - 3
        if value.count > limit { throw GATTClientError.valueTooLong(length: value.count, limit: limit) }
    }

    /// Runs a decoder, turning its `ATTPDUError` into `GATTClientError.malformedResponse`.
    private func decoded<T>(_ request: ATTOpcode, _ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as ATTPDUError {
            throw GATTClientError.malformedResponse(error, request: request)
        }
    }

    /// A transaction whose Attribute Not Found answer ends a discovery procedure normally (nil).
    private func transactUntilNotFound(_ pdu: [UInt8]) async throws -> [UInt8]? {
        do { return try await transact(pdu) } catch let error as GATTClientError
            where error.attErrorCode == .attributeNotFound
        {
            return nil
        }
    }

    /// One request and its response PDU, queued behind any outstanding request.
    func transact(_ pdu: [UInt8]) async throws -> [UInt8] {
        let opcode = ATTOpcode(pdu[0])
        do {
            return try await withCheckedThrowingContinuation { (continuation: Waiter) in
                let now = clock.now()
                step { s in
                    s.nextID += 1
                    s.waiters[s.nextID] = continuation
                    return s.core.request(s.nextID, pdu, now: now)
                }
            }
        } catch let failure as ATTClientCore.Failure {
            switch failure {
            case .errorResponse(let e): throw GATTClientError.att(e.code, request: e.requestOpcode, handle: e.handle)
            case .timeout(let op): throw GATTClientError.timeout(request: op)
            case .linkClosed: throw GATTClientError.linkClosed
            case .malformed(let e): throw GATTClientError.malformedResponse(e, request: opcode)
            }
        }
    }

    /// Feeds the core (and the client's state) under the lock, then performs the actions outside it, in order:
    /// waiters resume, PDUs go to the bearer, values to `events`.
    private func step(_ body: (inout State) -> [ATTClientCore.Action]) {
        typealias Resume = (Waiter, Result<[UInt8], ATTClientCore.Failure>)
        let (actions, resumes, serviceChanged): ([ATTClientCore.Action], [Resume], UInt16?) = state.withLock { s in
            let actions = body(&s)
            var resumes: [Resume] = []
            for action in actions {
                switch action {
                case .complete(let id, let pdu):
                    if let c = s.waiters.removeValue(forKey: id) { resumes.append((c, .success(pdu))) }
                case .fail(let id, let failure):
                    if let c = s.waiters.removeValue(forKey: id) { resumes.append((c, .failure(failure))) }
                default: break
                }
            }
            return (actions, resumes, s.serviceChangedHandle)
        }
        for (continuation, result) in resumes { continuation.resume(with: result.mapError { $0 as any Error }) }
        var linkGone = false
        for action in actions {
            switch action {
            case .send(let pdu):
                guard !linkGone else { continue }
                do { try bearer.send(pdu) } catch {
                    // The link went away under us: fail every waiter now rather than at the timeout.
                    logger.debug(
                        "ATT bearer refused a PDU; treating the link as closed",
                        metadata: ["error": "\(error)"])
                    linkGone = true
                    step { $0.core.bearerClosed() }
                }
            case .notification(let v):
                deliver(.value(handle: v.handle, bytes: v.value, indication: false))
            case .indication(let v):
                if v.handle == serviceChanged, v.value.count == 4 {
                    var c = ByteCursor(v.value)
                    let start = c.readLE16()!
                    let end = c.readLE16()!
                    state.withLock { $0.serviceChanges += 1 }
                    deliver(
                        start <= end
                            ? .serviceChanged(start...end)
                            : .value(handle: v.handle, bytes: v.value, indication: true))
                } else {
                    deliver(.value(handle: v.handle, bytes: v.value, indication: true))
                }
                step { $0.core.confirmIndication() }
            case .dropBearer:
                bearer.drop()
            case .complete, .fail:
                break
            }
        }
    }

    private func deliver(_ event: GATTClientEvent) {
        if case .dropped = eventContinuation.yield(event) {
            state.withLock { $0.droppedEvents += 1 }
        }
    }
}
