import BLEDomain
import BLETransport

/// The supervisor's kernel-adapter specifics: which adapter a spec bound by address opens, and the ladder's USB
/// device reset step.
extension AdapterSupervisor {
    /// The spec to open now: a kernel adapter configured with an address becomes whichever adapter has it (the
    /// configured one if it does). Remembers the result, so rfkill is followed on the adapter actually opened.
    func resolveKernelAdapter() throws -> DeviceSpec {
        let target = try KernelAdapters.resolve(spec, options: options)
        if case .kernel(let name) = target {
            let previous = shared.withLock { s -> String? in
                defer { s.boundAdapter = name }
                return s.boundAdapter
            }
            if name != previous, name != spec.description, let address = options.adapterAddress {
                logger.warning("adapter \(spec): \(address) is \(name) now; opening \(name)")
            }
        }
        return target
    }

    /// The kernel adapter that is (or will be) opened for `configured`: bound by address, the adapter that has the
    /// address now, else the last one opened, else none (the configured name's adapter does not have the address);
    /// otherwise the configured name.
    func kernelAdapter(configured: String) -> String? {
        guard options.adapterAddress != nil else { return configured }
        if let now = try? KernelAdapters.resolve(adapter: configured, address: options.adapterAddress) { return now }
        return shared.withLock { $0.boundAdapter }
    }

    /// The rfkill switch of that adapter (nil: no such adapter now, or it has no switch).
    func rfkillSwitch(configured: String) -> UInt32? {
        kernelAdapter(configured: configured).flatMap { RfkillDevice.index(ofAdapter: $0) }
    }

    /// Ladder step `usbReset`: USBDEVFS_RESET on the adapter's USB device. btusb is unbound and bound again, so the
    /// adapter leaves and returns; its return is the step's outcome. With /dev/rfkill the machine hears it (the
    /// adapter's switch is deleted and added with it) and opens the adapter; without, this waits for the adapter
    /// to be listed again (bounded) and opens it. A step that cannot be done says why (not USB, not permitted).
    func resetUSBDevice(sighting: @escaping @Sendable (Sighting) -> Void) async {
        guard case .kernel(let configured) = spec else {
            post(.stepFailed(.usbReset, reason: "USB device reset: \(spec) is not a kernel adapter"))
            return
        }
        guard let name = kernelAdapter(configured: configured) else {
            let address = options.adapterAddress ?? ""
            post(.stepFailed(.usbReset, reason: "USB device reset: no adapter with address \(address)"))
            return
        }
        let node: USBDeviceNode
        do {
            node = try USBDeviceNode.of(adapter: name)
        } catch {
            post(.stepFailed(.usbReset, reason: "\(error)"))
            return
        }
        // The reset ends the user channel anyway; closed first, its end is not taken for a new fault.
        tearDown()
        do {
            try node.reset()
        } catch {
            post(.stepFailed(.usbReset, reason: "\(error)"))
            return
        }
        logger.warning("adapter \(configured): reset \(node) of \(name); waiting for the adapter to return")
        if shared.withLock({ $0.rfkill }) != nil { return }
        let bound = configuration.operationTimeout / 2
        guard
            await KernelAdapters.waitForAdapter(
                name, address: options.adapterAddress, clock: clock,
                timeout: bound) != nil
        else {
            post(.stepFailed(.usbReset, reason: "USB device reset of \(node): \(name) did not return within \(bound)"))
            return
        }
        await open(sighting: sighting)
    }
}
