import BLEHCI
import BLESimulator
import BLETestSupport
import BLETransport
import Testing

@testable import BLEHost

/// An in-memory ATT bearer: records what the client sent, and lets the test (or a responder such as the
/// simulator's GATT server) put PDUs on the way back.
final class TestATTBearer: ATTBearer, @unchecked Sendable {
    struct Gone: Error {}
    let incoming: AsyncStream<[UInt8]>
    private let continuation: AsyncStream<[UInt8]>.Continuation
    private let state = Locked<(sent: [[UInt8]], dropped: Bool, refusing: Bool)>(([], false, false))
    private let respond: (@Sendable ([UInt8]) -> [[UInt8]])?

    init(respond: (@Sendable ([UInt8]) -> [[UInt8]])? = nil) {
        self.respond = respond
        (incoming, continuation) = AsyncStream.makeStream(of: [UInt8].self)
    }

    func send(_ pdu: [UInt8]) throws {
        try state.withLock { s in
            if s.dropped || s.refusing { throw Gone() }
            s.sent.append(pdu)
        }
        for answer in respond?(pdu) ?? [] { continuation.yield(answer) }
    }

    func drop() {
        state.withLock { $0.dropped = true }
        continuation.finish()
    }

    /// A PDU from the peer.
    func feed(_ pdu: [UInt8]) { continuation.yield(pdu) }
    /// The peer goes away.
    func end() { continuation.finish() }
    /// `send` throws from now on, as a bearer does once its link is gone, while `incoming` stays open.
    func refuse() { state.withLock { $0.refusing = true } }
    var sent: [[UInt8]] { state.withLock { $0.sent } }
    var dropped: Bool { state.withLock { $0.dropped } }
}

/// A literal script: each expected request and the PDUs answering it, consumed in order.
final class ATTScript: @unchecked Sendable {
    private let steps: Locked<[(request: [UInt8], answers: [[UInt8]])]>
    let unexpected = Locked<[[UInt8]]>([])

    init(_ steps: [([UInt8], [[UInt8]])]) { self.steps = Locked(steps.map { (request: $0.0, answers: $0.1) }) }

    func answer(_ pdu: [UInt8]) -> [[UInt8]] {
        steps.withLock { s in
            guard let first = s.first, first.request == pdu else {
                unexpected.withLock { $0.append(pdu) }
                return []
            }
            s.removeFirst()
            return first.answers
        }
    }

    var remaining: Int { steps.withLock { $0.count } }
}

let nordicUART = BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!
let nordicRX = BluetoothUUID("6E400002-B5A3-F393-E0A9-E50E24DCCA9E")!
let nordicUARTBytes: [UInt8] = [
    0x9E, 0xCA, 0xDC, 0x24, 0x0E, 0xE5, 0xA9, 0xE0,
    0x93, 0xF3, 0xA3, 0xB5, 0x01, 0x00, 0x40, 0x6E,
]
let nordicRXBytes: [UInt8] = [
    0x9E, 0xCA, 0xDC, 0x24, 0x0E, 0xE5, 0xA9, 0xE0,
    0x93, 0xF3, 0xA3, 0xB5, 0x02, 0x00, 0x40, 0x6E,
]

/// A peripheral with GAP (0x0001–0x0003), GATT with Service Changed (0x0006–0x0009) and a 128-bit service
/// (0x0010–0x0013), at the default ATT_MTU of 23, as the Discover All procedures of Part G, §4.4.1, §4.6.1
/// and §4.7.1 walk it.
let discoveryScript: [([UInt8], [[UInt8]])] = [
    (
        [0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28],
        [[0x11, 0x06, 0x01, 0x00, 0x03, 0x00, 0x00, 0x18, 0x06, 0x00, 0x09, 0x00, 0x01, 0x18]]
    ),
    ([0x10, 0x0A, 0x00, 0xFF, 0xFF, 0x00, 0x28], [[0x11, 0x14, 0x10, 0x00, 0x13, 0x00] + nordicUARTBytes]),
    ([0x10, 0x14, 0x00, 0xFF, 0xFF, 0x00, 0x28], [[0x01, 0x10, 0x14, 0x00, 0x0A]]),
    ([0x08, 0x01, 0x00, 0x03, 0x00, 0x03, 0x28], [[0x09, 0x07, 0x02, 0x00, 0x02, 0x03, 0x00, 0x00, 0x2A]]),
    ([0x08, 0x03, 0x00, 0x03, 0x00, 0x03, 0x28], [[0x01, 0x08, 0x03, 0x00, 0x0A]]),
    ([0x08, 0x06, 0x00, 0x09, 0x00, 0x03, 0x28], [[0x09, 0x07, 0x07, 0x00, 0x20, 0x08, 0x00, 0x05, 0x2A]]),
    ([0x08, 0x08, 0x00, 0x09, 0x00, 0x03, 0x28], [[0x01, 0x08, 0x08, 0x00, 0x0A]]),
    ([0x04, 0x09, 0x00, 0x09, 0x00], [[0x05, 0x01, 0x09, 0x00, 0x02, 0x29]]),
    ([0x08, 0x10, 0x00, 0x13, 0x00, 0x03, 0x28], [[0x09, 0x15, 0x11, 0x00, 0x1A, 0x12, 0x00] + nordicRXBytes]),
    ([0x08, 0x12, 0x00, 0x13, 0x00, 0x03, 0x28], [[0x01, 0x08, 0x12, 0x00, 0x0A]]),
    ([0x04, 0x13, 0x00, 0x13, 0x00], [[0x05, 0x01, 0x13, 0x00, 0x02, 0x29]]),
]

/// Runs `body` with a client whose `run()` is going, then ends the bearer and returns how `run()` ended.
@discardableResult
func withGATTClient(
    _ bearer: TestATTBearer, clock: any BLEClock = ManualClock(), eventBufferSize: Int = 256,
    _ body: (GATTClient) async throws -> Void
) async throws -> Result<Void, any Error> {
    let client = GATTClient(bearer: bearer, clock: clock, eventBufferSize: eventBufferSize)
    let runner = Task { try await client.run() }
    try await body(client)
    bearer.end()
    return await runner.result
}

@Suite(.timeLimit(.minutes(1))) struct GATTClientTests {
    @Test func discoversServicesCharacteristicsAndDescriptorsWith16And128BitUUIDs() async throws {
        let script = ATTScript(discoveryScript)
        let bearer = TestATTBearer(respond: script.answer)
        try await withGATTClient(bearer) { client in
            let db = try await client.discoverAll()
            #expect(script.remaining == 0 && script.unexpected.withLock { $0 }.isEmpty)
            #expect(
                db.services.map(\.uuid)
                    == [BluetoothUUID(uuid16: 0x1800), BluetoothUUID(uuid16: 0x1801), nordicUART])
            #expect(db.services.map(\.endHandle) == [0x0003, 0x0009, 0x0013])
            let name = try #require(db.characteristic(BluetoothUUID(uuid16: 0x2A00)))
            #expect(name.valueHandle == 3 && name.properties == .read)
            #expect(name.descriptors.isEmpty && name.cccdHandle == nil)
            let changed = try #require(db.characteristic(GATTUUID.serviceChanged))
            #expect(changed.valueHandle == 8 && changed.properties == .indicate && changed.cccdHandle == 9)
            let rx = try #require(db.characteristic(nordicRX))
            #expect(rx.declarationHandle == 0x11 && rx.valueHandle == 0x12 && rx.endHandle == 0x13)
            #expect(rx.properties == [.read, .write, .notify] && rx.cccdHandle == 0x13)
        }
    }

    @Test func serviceChangedIndicationIsDeliveredWithItsRangeAndConfirmed() async throws {
        let script = ATTScript(discoveryScript)
        let bearer = TestATTBearer(respond: script.answer)
        try await withGATTClient(bearer) { client in
            _ = try await client.discoverAll()
            var events = client.events.makeAsyncIterator()
            bearer.feed([0x1D, 0x08, 0x00, 0x10, 0x00, 0xFF, 0xFF])
            #expect(await events.next() == .serviceChanged(0x0010...0xFFFF))
            #expect(await eventually { bearer.sent.last == [0x1E] })
            bearer.feed([0x1D, 0x12, 0x00, 0x68, 0x69])
            #expect(await events.next() == .value(handle: 0x12, bytes: [0x68, 0x69], indication: true))
            #expect(await eventually { bearer.sent.filter { $0 == [0x1E] }.count == 2 })
            bearer.feed([0x1B, 0x12, 0x00, 0x01])
            #expect(await events.next() == .value(handle: 0x12, bytes: [0x01], indication: false))
            #expect(client.statistics.serviceChanges == 1)
        }
    }

    @Test func readContinuesWithReadBlobWhileTheValueFillsTheMTU() async throws {
        let long = (0..<49).map { UInt8($0) }
        let script = ATTScript([
            ([0x0A, 0x03, 0x00], [[0x0B] + long[0..<22]]),
            ([0x0C, 0x03, 0x00, 0x16, 0x00], [[0x0D] + long[22..<44]]),
            ([0x0C, 0x03, 0x00, 0x2C, 0x00], [[0x0D] + long[44..<49]]),
            // Exactly ATT_MTU - 1 octets: the blob read is answered Attribute Not Long (§3.4.4.5).
            ([0x0A, 0x04, 0x00], [[0x0B] + long[0..<22]]),
            ([0x0C, 0x04, 0x00, 0x16, 0x00], [[0x01, 0x0C, 0x04, 0x00, 0x0B]]),
            ([0x0A, 0x05, 0x00], [[0x0B, 0x01, 0x02]]),
        ])
        try await withGATTClient(TestATTBearer(respond: script.answer)) { client in
            let three = try await client.read(3)
            let four = try await client.read(4)
            let five = try await client.read(5)
            #expect(three == long)
            #expect(four == Array(long[0..<22]))
            #expect(five == [0x01, 0x02])
            #expect(script.remaining == 0)
        }
    }

    @Test func errorResponseSurfacesTheATTCodeRequestAndHandle() async throws {
        let script = ATTScript([
            ([0x0A, 0x03, 0x00], [[0x01, 0x0A, 0x03, 0x00, 0x02]]),
            ([0x12, 0x07, 0x00, 0x01, 0x00], [[0x01, 0x12, 0x07, 0x00, 0xFD]]),
        ])
        try await withGATTClient(TestATTBearer(respond: script.answer)) { client in
            let readError = GATTClientError.att(.readNotPermitted, request: .readRequest, handle: 3)
            await #expect(throws: readError) { try await client.read(3) }
            #expect(readError.description == "ATT 0x02 Read Not Permitted in reply to Read Request for handle 0x0003")
            await #expect(throws: GATTClientError.att(.cccdImproperlyConfigured, request: .writeRequest, handle: 7)) {
                try await client.write(7, [0x01, 0x00])
            }
        }
    }

    @Test func malformedDiscoveryAnswersFailWithThePreciseReason() async throws {
        let notDividing = ATTScript([
            ([0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28], [[0x11, 0x06, 0x01, 0x00, 0x03, 0x00, 0x00, 0x18, 0x06]])
        ])
        try await withGATTClient(TestATTBearer(respond: notDividing.answer)) { client in
            await #expect(
                throws: GATTClientError.malformedResponse(
                    .lengthNotDividing(.readByGroupTypeResponse, length: 6, dataCount: 7),
                    request: .readByGroupTypeRequest)
            ) { _ = try await client.discoverAll() }
        }
        let valueOutside = ATTScript([
            ([0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28], [[0x11, 0x06, 0x01, 0x00, 0x03, 0x00, 0x00, 0x18]]),
            ([0x10, 0x04, 0x00, 0xFF, 0xFF, 0x00, 0x28], [[0x01, 0x10, 0x04, 0x00, 0x0A]]),
            ([0x08, 0x01, 0x00, 0x03, 0x00, 0x03, 0x28], [[0x09, 0x07, 0x02, 0x00, 0x02, 0x09, 0x00, 0x00, 0x2A]]),
        ])
        try await withGATTClient(TestATTBearer(respond: valueOutside.answer)) { client in
            await #expect(
                throws: GATTClientError.malformedResponse(
                    .valueHandleOutsideService(declaration: 2, valueHandle: 9, service: 1...3),
                    request: .readByTypeRequest)
            ) { _ = try await client.discoverAll() }
        }
        let oddService = ATTScript([  // a service UUID of 3 octets
            ([0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28], [[0x11, 0x07, 0x01, 0x00, 0x03, 0x00, 0x00, 0x18, 0x00]])
        ])
        try await withGATTClient(TestATTBearer(respond: oddService.answer)) { client in
            await #expect(
                throws: GATTClientError.malformedResponse(
                    .unsupportedEntryLength(.readByGroupTypeResponse, length: 7), request: .readByGroupTypeRequest)
            ) { _ = try await client.discoverAll() }
        }
    }

    @Test func transactionTimeoutAfterThirtyVirtualSecondsDropsTheBearerAndFailsEveryCaller() async throws {
        let clock = ManualClock()
        let bearer = TestATTBearer()  // a silent peer
        let client = GATTClient(bearer: bearer, clock: clock)
        let runner = Task { try await client.run() }
        let first = Task { try await client.read(3) }
        #expect(await eventually { bearer.sent.count == 1 && clock.sleeperCount == 1 })
        let second = Task { try await client.write(7, [0x01, 0x00]) }
        #expect(await eventually { client.statistics.waitingRequests == 2 && clock.sleeperCount == 1 })
        #expect(client.statistics.att.requestsSent == 1)
        clock.advance(by: .seconds(29))
        #expect(!bearer.dropped)
        clock.advance(by: .seconds(1))
        await #expect(throws: GATTClientError.timeout(request: .readRequest)) { try await first.value }
        await #expect(throws: GATTClientError.self) { try await second.value }
        await #expect(throws: GATTClientError.timeout(request: .readRequest)) { try await runner.value }
        #expect(bearer.dropped)
        #expect(bearer.sent == [[0x0A, 0x03, 0x00]])  // §3.3.3: nothing more was sent
        #expect(client.statistics.att.timeouts == 1)
        await #expect(throws: GATTClientError.linkClosed) { try await client.read(3) }
    }

    @Test func concurrentCallersAreSerialisedOneRequestAtATime() async throws {
        let bearer = TestATTBearer()
        try await withGATTClient(bearer) { client in
            let readers = (1...3).map { h in Task { try await client.read(UInt16(h)) } }
            for answered in 0..<3 {
                #expect(await eventually { bearer.sent.count == answered + 1 })
                for _ in 0..<50 { await Task.yield() }
                #expect(bearer.sent.count == answered + 1, "a second request went out before the answer")
                let request = bearer.sent[answered]
                #expect(request.first == 0x0A)
                bearer.feed([0x0B, request[1]])  // the value is the handle asked for
            }
            for (i, reader) in readers.enumerated() {
                let value = try await reader.value
                #expect(value == [UInt8(i + 1)])
            }
            #expect(Set(bearer.sent.map { $0[1] }) == [1, 2, 3])
        }
    }

    @Test func bearerEndFailsWaitingCallersWithLinkClosedAndRunReturns() async throws {
        let bearer = TestATTBearer()
        let client = GATTClient(bearer: bearer, clock: ManualClock())
        let runner = Task { try await client.run() }
        let reader = Task { try await client.read(3) }
        #expect(await eventually { bearer.sent.count == 1 })
        bearer.end()
        await #expect(throws: GATTClientError.linkClosed) { try await reader.value }
        try await runner.value
        var events = client.events.makeAsyncIterator()
        #expect(await events.next() == nil)
    }

    @Test func aBearerThatRefusesToSendFailsTheRequestWithLinkClosed() async throws {
        let bearer = TestATTBearer()
        try await withGATTClient(bearer) { client in
            bearer.refuse()
            await #expect(throws: GATTClientError.linkClosed) { try await client.read(3) }
            await #expect(throws: GATTClientError.linkClosed) { try await client.read(4) }
            #expect(throws: GATTClientError.linkClosed) { try client.writeWithoutResponse(3, [0x01]) }
        }
    }

    @Test func eventsAreBoundedAndDropsCountedWithoutBlockingTheReader() async throws {
        let bearer = TestATTBearer()
        let client = GATTClient(bearer: bearer, clock: ManualClock(), eventBufferSize: 2)
        let runner = Task { try await client.run() }
        for i in 0..<5 { bearer.feed([0x1B, 0x06, 0x00, UInt8(i)]) }
        bearer.end()
        try await runner.value  // the reader finished although nobody consumed events
        #expect(client.statistics.droppedEvents == 3)
        var got: [GATTClientEvent] = []
        for await e in client.events { got.append(e) }
        #expect(
            got == [
                .value(handle: 6, bytes: [3], indication: false),
                .value(handle: 6, bytes: [4], indication: false),
            ])
    }

    @Test func writesLongerThanTheMTUAndSubscriptionsWithoutTheirPropertyAreRefused() async throws {
        let bearer = TestATTBearer()
        try await withGATTClient(bearer) { client in
            await #expect(throws: GATTClientError.valueTooLong(length: 21, limit: 20)) {
                try await client.write(3, [UInt8](repeating: 0, count: 21))
            }
            #expect(throws: GATTClientError.valueTooLong(length: 21, limit: 20)) {
                try client.writeWithoutResponse(3, [UInt8](repeating: 0, count: 21))
            }
            try client.writeWithoutResponse(3, [0xAA])
            let c = GATTCharacteristic(
                uuid: BluetoothUUID(uuid16: 0x2A6E), declarationHandle: 5, valueHandle: 6,
                endHandle: 6, properties: [.read, .notify])
            await #expect(throws: GATTClientError.propertyMissing(.indicate, characteristic: 6)) {
                try await client.subscribe(c, indicate: true)
            }
            await #expect(throws: GATTClientError.noCCCD(characteristic: 6)) {
                try await client.subscribe(c, indicate: false)
            }
            #expect(bearer.sent == [[0x52, 0x03, 0x00, 0xAA]])
        }
    }
}

/// `GATTClient` end to end against the simulator's GATT server (the one the virtual controller serves).
@Suite(.timeLimit(.minutes(1))) struct GATTClientSimulatorTests {
    @Test func mtuDiscoveryReadSubscribeAndNotificationsAgainstSimGATTServer() async throws {
        let clock = ManualClock()
        let server = Locked(SimGATTServer(deviceName: "Sensor-01", phase: 0.5))
        let bearer = TestATTBearer { pdu in
            server.withLock { $0.handle(request: pdu, now: clock.now().seconds) }.map { [$0] } ?? []
        }
        try await withGATTClient(bearer, clock: clock) { client in
            #expect(try await client.exchangeMTU() == 247)
            #expect(try await client.exchangeMTU(100) == 247)  // sent once per connection
            #expect(bearer.sent.filter { $0.first == 0x02 }.count == 1)

            let db = try await client.discoverAll()
            // GAP, Environmental Sensing, GATT (Service Changed), Battery, Immediate Alert, Device Information.
            #expect(
                db.services.map(\.uuid)
                    == [0x1800, 0x181A, 0x1801, 0x180F, 0x1802, 0x180A].map {
                        BluetoothUUID(uuid16: $0)
                    })
            let ess = db.services[1]
            #expect(ess.characteristics.map(\.uuid) == [BluetoothUUID(uuid16: 0x2A6E), BluetoothUUID(uuid16: 0x2A6F)])
            let temperature = ess.characteristics[0]
            let humidity = ess.characteristics[1]
            #expect(temperature.valueHandle == SimGATTServer.temperatureHandle && temperature.cccdHandle == 0x0007)
            #expect(humidity.valueHandle == SimGATTServer.humidityHandle && humidity.cccdHandle == 0x000A)
            #expect(temperature.properties == [.read, .notify])

            #expect(try await client.read(0x0003) == Array("Sensor-01".utf8))
            let expected = server.withLock { $0.value(of: SimGATTServer.temperatureHandle, at: 0) }
            #expect(try await client.read(temperature.valueHandle) == expected)

            try await client.subscribe(temperature, indicate: false)
            try await client.subscribe(humidity, indicate: false)
            #expect(server.withLock { $0.notifying } == [0x0006, 0x0009])

            clock.advance(by: .seconds(60))
            var events = client.events.makeAsyncIterator()
            let due = server.withLock { $0.notifications(at: 60) }
            #expect(due.count == 2)
            for pdu in due { bearer.feed(pdu) }
            let t = server.withLock { $0.value(of: 0x0006, at: 60) }
            let h = server.withLock { $0.value(of: 0x0009, at: 60) }
            #expect(await events.next() == .value(handle: 0x0006, bytes: t, indication: false))
            #expect(await events.next() == .value(handle: 0x0009, bytes: h, indication: false))

            try await client.unsubscribe(temperature)
            #expect(server.withLock { $0.notifying } == [0x0009])
            // The Manufacturer Name String (32 octets; Read Blob against this server is proved in the simulator's
            // own tests, at MTU 23).
            let manufacturer = try #require(db.characteristic(BluetoothUUID(uuid16: 0x2A29)))
            let name = try await client.read(manufacturer.valueHandle)
            #expect(name == server.withLock { $0.value(of: manufacturer.valueHandle, at: 60) })
            #expect(client.statistics.att.protocolErrors == 0)
        }
    }
}
