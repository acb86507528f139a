import CBluetoothShim
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The kernel's Bluetooth adapters by public address: an adapter that comes back under another index (unplugged
/// and replugged while another took its number, a USB reset, a reordered boot) is still the one with the same
/// address, so a gateway configured with `adapter.address` binds to the address, not to the number.
public enum KernelAdapters {
    /// One adapter the kernel knows: "hci1" and its public address "AA:BB:CC:DD:EE:FF" (the kernel's order,
    /// most significant byte first; "00:00:00:00:00:00" while the controller has not told it yet).
    public struct Entry: Sendable, Hashable, CustomStringConvertible {
        public var name: String
        public var address: String
        public init(name: String, address: String) {
            self.name = name
            self.address = address
        }
        public var description: String { "\(name) \(address)" }
    }

    /// Checks and normalises an address given in a config file or on the command line: six two-digit hex bytes
    /// separated by colons, any case, in the order `hciconfig`/`btmgmt` print it. Returns it in upper case.
    /// Throws `.badSpec` with the reason.
    public static func normalizedAddress(_ text: String) throws -> String {
        guard text.utf8.count == 17, !text.contains("-"), let address = BDAddress(text) else {
            throw TransportError(
                .badSpec,
                "bad adapter address \"\(text)\": expected six hex bytes separated by"
                    + " colons, as the kernel prints it (e.g. 00:1A:7D:DA:71:13)")
        }
        return address.description
    }

    /// The adapter to open for `adapter` ("hci0") when the configuration also names an address: `adapter`
    /// itself when its address matches, otherwise whichever adapter has the address now (the lowest index if,
    /// against all sense, two do). No address: `adapter` unchanged. Pure: `present` is the kernel's list.
    public static func resolve(adapter: String, address: String?, present: [Entry]) throws -> String {
        guard let address else { return adapter }
        let wanted = try normalizedAddress(address)
        if present.contains(where: { $0.name == adapter && $0.address == wanted }) { return adapter }
        let byIndex = present.sorted { (index(of: $0.name) ?? .max) < (index(of: $1.name) ?? .max) }
        if let other = byIndex.first(where: { $0.address == wanted }) { return other.name }
        let seen =
            present.isEmpty
            ? "the kernel has no adapter"
            : "present: " + byIndex.map(\.description).joined(separator: ", ")
        throw TransportError(
            .noSuchAdapter, errno: ENODEV,
            "no Bluetooth adapter with address \(wanted) (configured as \(adapter); \(seen))")
    }

    /// `resolve` against the adapters the kernel has now.
    public static func resolve(adapter: String, address: String?, sysfs: String = "/sys") throws -> String {
        guard address != nil else { return adapter }
        return try resolve(adapter: adapter, address: address, present: list(sysfs: sysfs))
    }

    /// The spec to open: a kernel adapter bound by address becomes the adapter that has the address now.
    public static func resolve(_ spec: DeviceSpec, options: TransportOptions) throws -> DeviceSpec {
        guard case .kernel(let adapter) = spec, options.adapterAddress != nil else { return spec }
        return .kernel(adapter: try resolve(adapter: adapter, address: options.adapterAddress))
    }

    /// The adapters the kernel knows (the hciN entries of /sys/class/bluetooth; "hci0:11" entries are
    /// connections) with their addresses from HCIGETDEVINFO. An adapter that vanishes meanwhile is left out.
    public static func list(sysfs: String = "/sys") -> [Entry] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "\(sysfs)/class/bluetooth")) ?? []
        return names.compactMap { name -> Entry? in
            guard let i = index(of: name), let address = address(index: i) else { return nil }
            return Entry(name: name, address: address)
        }.sorted { index(of: $0.name)! < index(of: $1.name)! }
    }

    /// The public address of adapter `index` (HCIGETDEVINFO; bdaddr_t holds it least significant byte first).
    public static func address(index: UInt16) -> String? {
        var bytes = [UInt8](repeating: 0, count: 6)
        guard cbt_hci_dev_address(Int32(index), &bytes) == 0 else { return nil }
        return BDAddress(bytes: bytes)?.description
    }

    /// "hci3" → 3; nil for anything else ("hci3:12", "hcix", "hci03": the kernel never names an adapter so).
    /// The one reading of an adapter's name: device specs, sockets and sysfs all go through it.
    public static func index(of name: String) -> UInt16? {
        guard name.hasPrefix("hci") else { return nil }
        let digits = name.dropFirst(3)
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), let n = UInt16(digits), n < KernelHCISocket.noDevice,
            String(n) == digits
        else { return nil }
        return n
    }

    /// Waits until the adapter is back (by address if one is given, else by name), polling the kernel's list
    /// every `interval` up to `timeout`. Returns the adapter's name, or nil when it did not come back in time.
    public static func waitForAdapter(
        _ adapter: String, address: String?, clock: any BLEClock,
        timeout: Duration, interval: Duration = .milliseconds(250),
        sysfs: String = "/sys"
    ) async -> String? {
        let deadline = clock.now() + timeout
        while true {
            let present = list(sysfs: sysfs)
            if let address {
                if let name = try? resolve(adapter: adapter, address: address, present: present) { return name }
            } else if present.contains(where: { $0.name == adapter }) {
                return adapter
            }
            guard clock.now() + interval <= deadline else { return nil }
            do { try await clock.sleep(for: interval) } catch { return nil }
        }
    }
}
