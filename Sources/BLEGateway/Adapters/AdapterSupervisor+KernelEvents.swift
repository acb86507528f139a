import BLEDomain
import BLETransport

/// What the kernel says about the supervisor's adapter: rfkill's block changes and hotplug, and in shared mode the
/// management interface's index events (powered, added, removed), each told to the lifecycle as an event.
extension AdapterSupervisor {
    /// rfkill events for our adapter: block changes, and (since the kernel adds and removes an adapter's switch
    /// with the adapter) hotplug. Without /dev/rfkill (a container, no permission) the lifecycle still works; it
    /// just learns of a block or a returning adapter by its periodic open.
    func followRfkill(adapter name: String) async {
        let device: RfkillDevice
        do { device = try RfkillDevice() } catch {
            logger.debug("adapter \(name): no rfkill events (\(error))")
            return
        }
        shared.withLock { $0.rfkill = device }
        do {
            for try await e in device.events where e.kind == .bluetooth {
                let mine: UInt32? = rfkillSwitch(configured: name)
                let known = shared.withLock { $0.rfkillIndex }
                switch e.operation {
                case .add where e.index == mine:
                    shared.withLock { $0.rfkillIndex = e.index }
                    post(.rfkillChanged(soft: e.soft, hard: e.hard))
                    // The first add is the device's greeting on open; a later one is the adapter coming back.
                    if known != nil { post(.adapterAdded) }
                case .add where mine == nil && options.adapterAddress != nil:
                    // Bound by address and our adapter is not to be found: a new switch may be it, back under another
                    // index with its address not read yet. The open finds out (and backs off if it is not).
                    post(.adapterAdded)
                case .change where e.index == mine || e.index == known:
                    post(.rfkillChanged(soft: e.soft, hard: e.hard))
                case .delete where e.index == known:
                    post(.adapterRemoved)
                default:
                    continue
                }
            }
        } catch {
            logger.debug("adapter \(name): rfkill events ended: \(error)")
        }
    }

    /// Shared mode: the kernel's word on our adapter. Powered off or removed, the session is closed at once (its
    /// discovery would only be refused) and the machine told; powered on or added, the machine opens it again now
    /// rather than at its next retry. Without a monitor socket shared mode cannot run at all, so this is no less
    /// available than the session itself.
    func followIndexes(adapter configured: String) async {
        let watcher: KernelIndexEvents
        do { watcher = try KernelIndexEvents() } catch {
            logger.debug("adapter \(configured): no index events (\(error))")
            return
        }
        defer { watcher.close() }
        do {
            for try await e in watcher.events {
                let name = shared.withLock { $0.boundAdapter } ?? configured
                guard "hci\(e.index)" == name else { continue }
                switch e.change {
                case .up, .added:
                    post(.adapterAdded)
                case .down:
                    tearDown()
                    post(
                        .adapterPoweredOff(
                            reason: "\(name) was powered off (by bluetoothd, the management interface, "
                                + "rfkill or `hciconfig down`)"))
                case .removed:
                    tearDown()
                    post(.adapterRemoved)
                }
            }
        } catch {
            logger.debug("adapter \(configured): index events ended: \(error)")
        }
    }
}
