import BLETransport

/// One owner per peripheral across the fleet (docs/PERIPHERALS.md): what the service tells the ownership
/// coordinator, and the coordinator's word on which addresses this gateway connects.
extension PeripheralService {
    /// With one owner per peripheral: what the service tells the coordinator, and which addresses it may connect.
    public struct Ownership: Sendable {
        /// The device heard (an advertisement's or the link's RSSI).
        public var heard: @Sendable (BDAddress, Double) -> Void
        /// The adapter that makes links came up (true) or went away.
        public var adapter: @Sendable (Bool) -> Void
        public init(heard: @escaping @Sendable (BDAddress, Double) -> Void, adapter: @escaping @Sendable (Bool) -> Void)
        {
            self.heard = heard
            self.adapter = adapter
        }
    }

    struct Owned: Sendable {
        var hooks: Ownership
        /// Addresses this gateway owns (connected, or being connected).
        var owned: Set<BDAddress> = []
        /// Addresses another gateway owns, with the owner.
        var standby: [BDAddress: String] = [:]
    }

    /// One owner per peripheral: from now on address intents are connected only when `take` says so.
    public func coordinate(_ hooks: Ownership) {
        books.withLock { $0.ownership = Owned(hooks: hooks) }
    }

    /// This gateway owns `address`: keep it connected.
    public func take(_ address: BDAddress) {
        guard let intent = intent(for: address) else { return }
        books.withLock { b in
            b.ownership?.owned.insert(address)
            b.ownership?.standby[address] = nil
        }
        logger.info("peripheral \(address): this gateway owns it")
        post(.want(.init(address: address, addressType: intent.addressType ?? .public)))
    }

    /// This gateway can no longer claim `address` (its broker connection is gone): the link is ended
    /// ("no longer wanted") until it owns the device again.
    public func letGo(_ address: BDAddress) {
        books.withLock { b in _ = b.ownership?.owned.remove(address) }
        post(.unwant(address))
    }

    /// Another gateway owns `address`: let it go, and report `standby` naming the owner once the link is down.
    public func standBy(_ address: BDAddress, owner: String) {
        let live = books.withLock { b in
            b.ownership?.owned.remove(address)
            b.ownership?.standby[address] = owner
            return b.manager.status(of: address)
        }
        logger.info("peripheral \(address): owned by \(owner); standby")
        post(.unwant(address))
        if live == nil || live?.state == .disconnected {
            output.standby(address, intent(for: address)?.name, owner)
        }
    }
}
