import Foundation
import Testing

@testable import BLETransport

/// `USBDeviceNode.of` on a temporary tree laid out like sysfs: relative symlinks from /sys/class/bluetooth into
/// /sys/devices, `device` and `subsystem` links, busnum/devnum files.
@Suite final class USBDeviceResetTests {
    let root: String
    var sysfs: String { root + "/sys" }

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("usbreset-\(UUID().uuidString)").path
        let fm = FileManager.default
        func dir(_ p: String) throws {
            try fm.createDirectory(atPath: "\(root)/sys/\(p)", withIntermediateDirectories: true)
        }
        func link(_ p: String, _ target: String) throws {
            try fm.createSymbolicLink(atPath: "\(root)/sys/\(p)", withDestinationPath: target)
        }
        func file(_ p: String, _ text: String) throws {
            try text.write(toFile: "\(root)/sys/\(p)", atomically: false, encoding: .utf8)
        }
        try dir("class/bluetooth")
        try dir("bus/usb")
        try dir("bus/platform")
        // A USB dongle: bus 1, device 4; btusb bound to interface 1-2:1.0.
        let usb = "devices/pci0000:00/0000:00:14.0/usb1/1-2"
        try dir("\(usb)/1-2:1.0/bluetooth/hci0")
        try file("\(usb)/busnum", "1\n")
        try file("\(usb)/devnum", "4\n")
        try link("\(usb)/1-2:1.0/subsystem", "../../../../../../bus/usb")
        try link("\(usb)/1-2:1.0/bluetooth/hci0/device", "../../../1-2:1.0")
        try link("class/bluetooth/hci0", "../../\(usb)/1-2:1.0/bluetooth/hci0")
        // vhci: a virtual device, no parent.
        try dir("devices/virtual/bluetooth/hci1")
        try link("class/bluetooth/hci1", "../../devices/virtual/bluetooth/hci1")
        // A UART controller on a platform device.
        try dir("devices/platform/serial0/bluetooth/hci2")
        try link("devices/platform/serial0/subsystem", "../../../bus/platform")
        try link("devices/platform/serial0/bluetooth/hci2/device", "../../../serial0")
        try link("class/bluetooth/hci2", "../../devices/platform/serial0/bluetooth/hci2")
        // An adapter whose device went away (dangling link, as after an unplug).
        try link("class/bluetooth/hci3", "../../devices/pci0000:00/0000:00:14.0/usb1/1-9/1-9:1.0/bluetooth/hci3")
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    @Test func aUSBAdapterResolvesToItsUsbfsNode() throws {
        let node = try USBDeviceNode.of(adapter: "hci0", sysfs: sysfs, dev: "/dev")
        #expect(node.bus == 1)
        #expect(node.device == 4)
        #expect(node.path == "/dev/bus/usb/001/004")
        #expect(node.sysfsPath.hasSuffix("/devices/pci0000:00/0000:00:14.0/usb1/1-2"))
    }

    @Test func aVhciAdapterIsNotUSBAndSaysVirtual() {
        #expect {
            try USBDeviceNode.of(adapter: "hci1", sysfs: sysfs)
        } throws: {
            guard let e = $0 as? USBResetError else { return false }
            return e.kind == .notUSB && e.description.contains("not a USB device") && e.message.contains("virtual")
        }
    }

    @Test func aUARTAdapterIsNotUSBAndNamesItsBus() {
        #expect {
            try USBDeviceNode.of(adapter: "hci2", sysfs: sysfs)
        } throws: {
            guard let e = $0 as? USBResetError else { return false }
            return e.kind == .notUSB && e.message.contains("platform")
        }
    }

    @Test(arguments: ["hci3", "hci9"])
    func aMissingAdapterIsNoSuchDevice(adapter: String) {
        #expect {
            try USBDeviceNode.of(adapter: adapter, sysfs: sysfs)
        } throws: { ($0 as? USBResetError)?.kind == .noSuchDevice }
    }

    @Test func resettingANodeThatIsGoneIsNoSuchDevice() {
        let node = USBDeviceNode(sysfsPath: sysfs, bus: 1, device: 4, path: root + "/dev/bus/usb/001/004")
        #expect { try node.reset() } throws: { ($0 as? USBResetError)?.kind == .noSuchDevice }
    }

    @Test func resettingSomethingThatIsNoUsbfsNodeIsAnIOErrorWithErrno() throws {
        // A regular file answers the ioctl with ENOTTY: the request reached the kernel, which refused it.
        let path = root + "/not-a-device"
        try Data().write(to: URL(fileURLWithPath: path))
        let node = USBDeviceNode(sysfsPath: sysfs, bus: 1, device: 4, path: path)
        #expect { try node.reset() } throws: {
            guard let e = $0 as? USBResetError else { return false }
            return e.kind == .io && e.errno == ENOTTY && e.message.contains("USBDEVFS_RESET")
        }
    }

    @Test func permissionErrorsReadNotPermitted() {
        #expect(USBDeviceNode.error(EACCES, "open /dev/bus/usb/001/004").kind == .notPermitted)
        #expect(USBDeviceNode.error(EPERM, "USBDEVFS_RESET").description.contains("not permitted"))
    }
}
