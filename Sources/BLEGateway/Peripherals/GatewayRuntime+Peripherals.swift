import BLEConfiguration
import BLEDomain
import BLEHCI
import BLEHost
import BLEPublishing
import BLESpool
import BLETransport
import Foundation
import Logging

/// The runtime's side of peripheral links: readings for what `PeripheralService` observes, and the write command
/// topic.
extension GatewayRuntime {
    /// The service, wired to readings that go through the spool like every other: states durably, values and RSSI
    /// as samples (values urgently: within `spool.value_commit_window_ms`). Built before `self` exists (the source needs it), so it captures the pieces, not the runtime.
    static func makePeripherals(
        configuration: GatewayConfiguration, readings: GatewayReadings, spool: Spool,
        publisher: SpoolPublisher, clock: any BLEClock, logger: Logger,
        synced: @escaping @Sendable () -> Bool,
        stateSeen: @escaping @Sendable (BDAddress) -> Void = { _ in }
    ) -> PeripheralService {
        let record: @Sendable (Reading) -> Void = { reading in
            recordDurably(reading, spool: spool, publisher: publisher, logger: logger)
        }
        let output = PeripheralService.Output(
            state: { address, name, status in
                let now = clock.now()
                let ts = clock.unixTime()
                record(
                    readings.peripheralState(
                        address, name: name, status: status,
                        since: ts - (now - status.since).seconds, ts: ts, synced: synced()))
                stateSeen(address)
            },
            rssi: { address, rssi in
                _ = spool.append(readings.peripheralRSSI(address, rssi: rssi, ts: clock.unixTime(), synced: synced()))
            },
            value: { address, service, characteristic, value, via in
                let decoded = GATTValueDecoding.decode(characteristic, value).map { Array($0.json.utf8) }
                let reading = readings.characteristicValue(
                    address, service: service, characteristic: characteristic, value: value, via: via,
                    decoded: decoded, ts: clock.unixTime(), synced: synced())
                // Someone waits for a value: committed within the value window, not the samples' longer one.
                _ = spool.append(reading, urgent: true)
            },
            gatt: { address, mtu, database in
                record(
                    readings.peripheralGATT(
                        address, mtu: mtu, database: database, ts: clock.unixTime(),
                        synced: synced()))
            },
            standby: { address, name, owner in
                let ts = clock.unixTime()
                record(
                    readings.peripheralStandby(address, name: name, owner: owner, since: ts, ts: ts, synced: synced()))
                stateSeen(address)
            })
        return PeripheralService(
            intents: configuration.peripherals, connections: configuration.connections,
            clock: clock, logger: logger, output: output)
    }

    /// Corrects what an earlier run left retained: a peripheral state from another run that says anything but
    /// `disconnected`, for a device this run does not know (a name or service match not seen yet, an intent since
    /// removed), is replaced by `disconnected`. Known devices need nothing: their state is published by this run.
    func correctStalePeripheralStates() -> Task<Void, Never>? {
        let filter = "\(readings.topics.peripheralStatePrefix)+/state"
        let stream: AsyncStream<MQTTMessage>
        do {
            stream = try client.subscribe(filter, qos: .atLeastOnce)
        } catch {
            logger.error("peripherals: cannot subscribe to \(filter): \(error)")
            return nil
        }
        return Task { [self] in
            for await message in stream where message.retain {
                let levels = message.topic.split(separator: "/")
                guard levels.count >= 2, let address = BDAddress(topicComponent: levels[levels.count - 2]),
                    case .object(let pairs)? = try? RemoteJSONParser.parse(message.payload)
                else { continue }
                let fields = Dictionary(pairs, uniquingKeysWith: { a, _ in a })
                guard case .string(let run)? = fields["run"], run != readings.run,
                    case .string(let state)? = fields["state"], state != "disconnected",
                    peripherals.statuses[address] == nil
                else { continue }
                var status = ConnectionManager.Status(
                    state: .disconnected, reason: nil, attempts: 0,
                    since: clock.now(), handle: nil)
                status.reason = .gatewayRestarted
                logger.info("peripheral \(address): retained \(state) from an earlier run corrected to disconnected")
                recordState(
                    readings.peripheralState(
                        address, name: nil, status: status, since: clock.unixTime(),
                        ts: clock.unixTime(), synced: clockSynchronized()))
            }
        }
    }

    /// Write commands carried out at once (each waits for its link's ATT transaction, up to the ATT timeout).
    static let maxWritesInFlight = 16

    /// Write commands on `…/peripherals/+/write`: each answered on `…/write/result`.
    func followWrites() -> Task<Void, Never>? {
        let stream: AsyncStream<MQTTMessage>
        do {
            stream = try client.subscribe(readings.topics.peripheralWrites, qos: .atLeastOnce)
        } catch {
            logger.error("peripherals: cannot subscribe to \(readings.topics.peripheralWrites): \(error)")
            return nil
        }
        return Task { [self] in
            // At most `maxWritesInFlight` at once: the next waits in the subscription's bounded buffer (what
            // overflows it is counted by the client), not as one more task. A retained command would be replayed at
            // every start: only live ones are carried out.
            try? await forEachConcurrently(stream.filter { !$0.retain }, atMost: Self.maxWritesInFlight) { message in
                await self.write(message)
            }
        }
    }

    /// One write command: parsed, checked against the intent's `writable`, carried out, answered.
    func write(_ message: MQTTMessage) async {
        let levels = message.topic.split(separator: "/")
        guard levels.count >= 3, levels[levels.count - 1] == "write",
            let address = BDAddress(topicComponent: levels[levels.count - 2])
        else { return }
        var id: String?
        var characteristicText: String?
        func answer(_ error: String?, att: UInt8? = nil) {
            recordState(
                readings.writeResult(
                    address, id: id, characteristic: characteristicText, error: error,
                    attError: att, ts: clock.unixTime(), synced: clockSynchronized()))
        }
        guard let root = try? RemoteJSONParser.parse(message.payload), case .object(let pairs) = root else {
            return answer("the command is not a JSON object")
        }
        var service: BluetoothUUID?
        var characteristic: BluetoothUUID?
        var value: [UInt8]?
        var response = true
        for (k, v) in pairs {
            switch (k, v) {
            case ("id", .string(let s)): id = s
            case ("characteristic", .string(let s)):
                characteristicText = s.lowercased()
                characteristic = BluetoothUUID(s)
            case ("service", .string(let s)): service = BluetoothUUID(s)
            case ("value", .string(let s)): value = s.utf8.count <= 1024 ? HexDigits.parseDigits(s) : nil
            case ("response", .bool(let b)): response = b
            default: return answer("unexpected key or type: \(k)")
            }
        }
        guard let characteristic else { return answer("\"characteristic\" must be a UUID") }
        guard let value else { return answer("\"value\" must be hex digits") }
        do {
            try await peripherals.write(
                address, service: service, characteristic: characteristic, value: value,
                withResponse: response)
            answer(nil)
        } catch {
            answer(error.description, att: error.attError)
        }
    }
}
