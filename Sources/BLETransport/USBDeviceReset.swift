import CBluetoothShim
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Why a USB device reset could not be done; each kind says what a person can do about it.
public struct USBResetError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Kind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The adapter hangs off another bus (UART, SDIO, PCI) or none at all (vhci, "virtual").
        public static let notUSB = Kind(rawValue: "not a USB device")
        /// EPERM/EACCES on the usbfs node: it needs write access to /dev/bus/usb/BBB/DDD (root, or a udev rule).
        public static let notPermitted = Kind(rawValue: "not permitted")
        /// The adapter or its USB device is gone (unplugged meanwhile, or never there).
        public static let noSuchDevice = Kind(rawValue: "no such device")
        /// Anything else the kernel answered (errno in the message).
        public static let io = Kind(rawValue: "i/o error")
        public var description: String { rawValue }
    }

    public var kind: Kind
    public var errno: Int32?
    public var message: String

    public init(_ kind: Kind, errno: Int32? = nil, _ message: String) {
        self.kind = kind
        self.errno = errno
        self.message = message
    }

    public var description: String { "USB device reset: \(kind): \(message)" }
}

/// The USB device under a kernel Bluetooth adapter, as sysfs lays it out:
///
///     /sys/class/bluetooth/hci0 → ../../devices/pci0000:00/0000:00:14.0/usb1/1-4/1-4:1.0/bluetooth/hci0
///     hci0/device               → the USB interface (1-4:1.0), whose `subsystem` is bus/usb
///     1-4/busnum, 1-4/devnum    → the usbfs node /dev/bus/usb/001/003
///
/// A vhci adapter lives under /sys/devices/virtual and has no `device` at all.
public struct USBDeviceNode: Sendable, Hashable, CustomStringConvertible {
    /// The USB device's sysfs directory (the interface's parent, "…/usb1/1-4").
    public var sysfsPath: String
    public var bus: Int
    public var device: Int
    /// /dev/bus/usb/BBB/DDD under the given dev root.
    public var path: String

    public var description: String { "USB device \(bus)-\(device) (\(path))" }

    /// Resolves adapter `adapter` ("hci0") to its USB device. `sysfs` and `dev` are the roots ("/sys", "/dev"),
    /// injectable so a test can lay out a tree like sysfs in a temporary directory.
    public static func of(adapter: String, sysfs: String = "/sys", dev: String = "/dev") throws -> USBDeviceNode {
        let classEntry = "\(sysfs)/class/bluetooth/\(adapter)"
        guard let adapterPath = realPath(classEntry) else {
            throw USBResetError(.noSuchDevice, errno: ENODEV, "no Bluetooth adapter \(adapter) (\(classEntry))")
        }
        guard let interface = realPath("\(adapterPath)/device") else {
            let virtual = adapterPath.contains("/devices/virtual/")
            throw USBResetError(
                .notUSB,
                "\(adapter) has no parent device"
                    + (virtual ? " (virtual: a vhci or emulated controller)" : ""))
        }
        let bus = realPath("\(interface)/subsystem").map { ($0 as NSString).lastPathComponent }
        guard bus == "usb" else {
            throw USBResetError(.notUSB, "\(adapter) sits on the \(bus ?? "unknown") bus (\(interface))")
        }
        // The adapter's `device` is the USB interface (btusb binds interfaces); busnum/devnum are its device's.
        let usbDevice = (interface as NSString).deletingLastPathComponent
        guard let busnum = readNumber("\(usbDevice)/busnum"), let devnum = readNumber("\(usbDevice)/devnum") else {
            throw USBResetError(.notUSB, "\(adapter): no busnum/devnum above its USB interface (\(usbDevice))")
        }
        return USBDeviceNode(
            sysfsPath: usbDevice, bus: busnum, device: devnum,
            path: "\(dev)/bus/usb/\(pad3(busnum))/\(pad3(devnum))")
    }

    /// USBDEVFS_RESET on the node (drivers/usb/core/devio.c): the device is reset and re-enumerated; btusb is
    /// unbound and bound again, so the adapter disappears and comes back (under the lowest free index).
    public func reset() throws {
        let fd = Glibc.open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Self.error(errno, "open \(path)") }
        defer { _ = Glibc.close(fd) }
        guard cbt_usb_reset(fd) == 0 else { throw Self.error(errno, "USBDEVFS_RESET on \(path)") }
    }

    static func error(_ e: Int32, _ what: String) -> USBResetError {
        let text = "\(what): \(String(cString: strerror(e))) (errno \(e))"
        switch e {
        case EPERM, EACCES:
            return USBResetError(.notPermitted, errno: e, "\(text); it needs write access to the usbfs node")
        case ENOENT, ENODEV, ENXIO:
            return USBResetError(.noSuchDevice, errno: e, text)
        default:
            return USBResetError(.io, errno: e, text)
        }
    }

    private static func realPath(_ path: String) -> String? {
        guard let p = Glibc.realpath(path, nil) else { return nil }
        defer { free(p) }
        return String(cString: p)
    }

    private static func readNumber(_ path: String) -> Int? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        return Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    private static func pad3(_ n: Int) -> String {
        let s = String(n)
        return String(repeating: "0", count: max(0, 3 - s.count)) + s
    }
}
