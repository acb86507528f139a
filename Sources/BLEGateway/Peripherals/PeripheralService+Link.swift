import BLEConfiguration
import BLEDomain
import BLEHCI
import BLEHost
import BLETransport
import Logging

/// One peripheral link's life once it is up: its GATT work (discovery, subscriptions, reads, the RSSI loop), its
/// values reported, and the write commands that go to it.
extension PeripheralService {
    func run(_ link: Link, maker: any PeripheralLinkMaker) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [self] in
                do {
                    try await link.client.run()
                } catch is CancellationError {
                } catch {
                    books.withLock { $0.stats.attTimeouts += 1 }
                    post(.drop(handle: link.handle, why: "\(error)"))
                }
            }
            group.addTask { [self] in await gatt(link) }
            // Shared mode has no RSSI of a link: HCI Read RSSI needs the controller, which the kernel owns.
            if connections.rssiIntervalSeconds > 0, maker.readsRSSI {
                group.addTask { [self] in
                    let every = Duration.seconds(connections.rssiIntervalSeconds)
                    while !Task.isCancelled {
                        do { try await clock.sleep(for: every) } catch { return }
                        if let rssi = await maker.rssi(of: link.handle) {
                            output.rssi(link.peer.address, rssi)
                            books.withLock { $0.ownership }?.hooks.heard(link.peer.address, Double(rssi))
                        }
                    }
                }
            }
            await group.next()
            group.cancelAll()
        }
    }

    /// MTU, discovery, subscriptions and reads; then values until the link ends. Service Changed starts it over.
    func gatt(_ link: Link) async {
        let address = link.peer.address
        do {
            let mtu = try await link.client.exchangeMTU()
            while !Task.isCancelled {
                let db = try await link.client.discoverAll()
                link.database.withLock { $0 = db }
                output.gatt(address, mtu, db)
                for sub in link.intent.subscribe {
                    guard let (_, c) = db.find(sub.characteristic) else {
                        logger.warning("peripheral \(address): no characteristic \(sub.characteristic) to subscribe to")
                        continue
                    }
                    let indicate = sub.indicate ?? !c.properties.contains(.notify)
                    do {
                        try await link.client.subscribe(c, indicate: indicate)
                    } catch let e as GATTClientError where e.attErrorCode != nil {
                        logger.warning("peripheral \(address): subscribe to \(sub.characteristic): \(e)")
                    }
                }
                for r in link.intent.read where r.intervalSeconds == 0 {
                    await read(link, r.characteristic)
                }
                let changed = await follow(link)
                if !changed { return }
                logger.info("peripheral \(address): Service Changed; discovering again")
            }
        } catch is CancellationError {
        } catch {
            logger.warning("peripheral \(address): GATT: \(error)")
        }
    }

    /// Values and periodic reads until the link ends (false) or the database changes (true).
    func follow(_ link: Link) async -> Bool {
        let address = link.peer.address
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask { [self] in
                for await event in link.client.events {
                    switch event {
                    case .value(let handle, let value, let indicated):
                        guard let (service, c) = link.database.withLock({ $0 })?.owner(ofValueHandle: handle) else {
                            continue
                        }
                        books.withLock { $0.stats.values += 1 }
                        output.value(address, service.uuid, c.uuid, value, indicated ? "indication" : "notification")
                    case .serviceChanged:
                        return true
                    }
                }
                return false
            }
            for r in link.intent.read where r.intervalSeconds > 0 {
                group.addTask { [self] in
                    while !Task.isCancelled {
                        do { try await clock.sleep(for: .seconds(r.intervalSeconds)) } catch { return false }
                        await read(link, r.characteristic)
                    }
                    return false
                }
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    func read(_ link: Link, _ ref: PeripheralIntent.CharacteristicRef) async {
        guard let db = link.database.withLock({ $0 }), let (service, c) = db.find(ref) else { return }
        do {
            let value = try await link.client.read(c.valueHandle)
            output.value(link.peer.address, service.uuid, c.uuid, value, "read")
        } catch {
            logger.warning("peripheral \(link.peer.address): read \(ref): \(error)")
        }
    }

    // MARK: - Writes

    /// Why a write was not done: the ATT error, or the gateway's refusal.
    public struct WriteFailure: Error, Sendable, CustomStringConvertible {
        public var description: String
        public var attError: UInt8?
    }

    /// Writes a characteristic value of a connected peripheral, if its intent allows it.
    public func write(
        _ address: BDAddress, service: BluetoothUUID?, characteristic: BluetoothUUID, value: [UInt8],
        withResponse: Bool
    ) async throws(WriteFailure) {
        guard let intent = intent(for: address) else {
            throw WriteFailure(description: "\(address) is not a configured peripheral")
        }
        guard intent.allowsWrite(service: service, characteristic: characteristic) else {
            books.withLock { $0.stats.refusedWrites += 1 }
            throw WriteFailure(
                description: "writes to \(characteristic.shortDescription) are not allowed by configuration")
        }
        let link = books.withLock { $0.session }?.gatt.withLock { $0.values.first { $0.peer.address == address } }
        guard let link, let db = link.database.withLock({ $0 }) else {
            throw WriteFailure(description: "\(address) is not connected")
        }
        guard let (_, c) = db.find(.init(service: service, characteristic: characteristic)) else {
            throw WriteFailure(description: "\(address) has no characteristic \(characteristic.shortDescription)")
        }
        books.withLock { $0.stats.writes += 1 }
        do {
            if withResponse {
                try await link.client.write(c.valueHandle, value)
            } else {
                try link.client.writeWithoutResponse(c.valueHandle, value)
            }
        } catch let e as GATTClientError {
            throw WriteFailure(description: "\(e)", attError: e.attErrorCode?.rawValue)
        } catch {
            throw WriteFailure(description: "\(error)")
        }
    }
}
