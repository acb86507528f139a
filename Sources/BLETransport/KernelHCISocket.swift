import CBluetooth
import CBluetoothShim

#if canImport(Glibc)
    import Glibc
#endif

/// Linux Bluetooth sockets (AF_BLUETOOTH, BTPROTO_HCI) bound to one of the kernel's HCI channels
/// (net/bluetooth/hci_sock.c): USER (exclusive, raw H4), MONITOR (a copy of all traffic) and
/// CONTROL (the management interface).
enum KernelHCISocket {
    /// HCI_DEV_NONE: channels that are not tied to one adapter (monitor, control).
    static let noDevice: UInt16 = 0xFFFF
    /// HCI_UP and HCI_RUNNING in the flags HCIGETDEVINFO returns (the kernel's `enum { HCI_UP, HCI_INIT,
    /// HCI_RUNNING, … }` in include/net/bluetooth/hci.h): up once initialised; running from the transport's open.
    static let upFlag: UInt32 = 1 << 0
    static let runningFlag: UInt32 = 1 << 2

    static func open(device: UInt16, channel: Int32, adapterName: String) throws -> Int32 {
        let fd = socket(AF_BLUETOOTH, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), BTPROTO_HCI)
        guard fd >= 0 else {
            let e = errno
            if e == EAFNOSUPPORT || e == EPROTONOSUPPORT {
                throw TransportError(
                    .unsupported, errno: e,
                    "this kernel has no Bluetooth: socket(AF_BLUETOOTH) failed (\(String(cString: strerror(e))));"
                        + " load the bluetooth module (modprobe bluetooth) or use a kernel built with CONFIG_BT")
            }
            throw TransportError.fromErrno(e, "socket(AF_BLUETOOTH, BTPROTO_HCI)")
        }
        var addr = sockaddr_hci()
        addr.hci_family = sa_family_t(AF_BLUETOOTH)
        addr.hci_dev = device
        addr.hci_channel = UInt16(channel)
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_hci>.size))
            }
        }
        if r != 0 {
            let e = errno
            _ = Glibc.close(fd)
            throw bindError(e, adapterName: adapterName, channel: channel)
        }
        return fd
    }

    static func bindError(_ e: Int32, adapterName: String, channel: Int32) -> TransportError {
        let channelName =
            [
                CBT_HCI_CHANNEL_USER: "user", CBT_HCI_CHANNEL_MONITOR: "monitor",
                CBT_HCI_CHANNEL_CONTROL: "control",
            ][Int(channel)] ?? "channel \(channel)"
        let text = "\(String(cString: strerror(e))) (errno \(e))"
        switch e {
        case EBUSY:
            return TransportError(
                .adapterBusy, errno: e,
                "\(adapterName) is busy: the kernel or bluetoothd holds it (\(text)). Power it off with"
                    + " `btmgmt -i \(adapterName) power off` or stop bluetooth.service, or use --mode shared")
        case EPERM, EACCES:
            return TransportError(
                .permissionDenied, errno: e,
                "binding the HCI \(channelName) channel of \(adapterName) was refused (\(text)): it needs"
                    + " CAP_NET_RAW and CAP_NET_ADMIN (run as root or"
                    + " `setcap cap_net_raw,cap_net_admin+ep blegateway`)")
        case ENODEV:
            return TransportError(.noSuchAdapter, errno: e, "no Bluetooth adapter \(adapterName) (\(text))")
        case EALREADY:
            return TransportError(
                .adapterBusy, errno: e,
                "\(adapterName) is already open in exclusive mode by another process (\(text))")
        default:
            return TransportError.fromErrno(e, "bind HCI \(channelName) channel of \(adapterName)")
        }
    }

    /// The adapter's HCIGETDEVINFO flags; throws `.noSuchAdapter` for a missing index and
    /// `.unsupported` on a kernel without Bluetooth.
    static func flags(index: UInt16, adapterName: String) throws -> UInt32 {
        let fd = socket(AF_BLUETOOTH, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), BTPROTO_HCI)
        guard fd >= 0 else {
            let e = errno
            if e == EAFNOSUPPORT || e == EPROTONOSUPPORT {
                throw TransportError(
                    .unsupported, errno: e,
                    "this kernel has no Bluetooth: socket(AF_BLUETOOTH) failed (\(String(cString: strerror(e))))")
            }
            throw TransportError.fromErrno(e, "socket(AF_BLUETOOTH, BTPROTO_HCI)")
        }
        defer { _ = Glibc.close(fd) }
        var flags: UInt32 = 0
        guard cbt_hci_dev_flags(fd, Int32(index), &flags) == 0 else {
            let e = errno
            if e == ENODEV { throw TransportError(.noSuchAdapter, errno: e, "no Bluetooth adapter \(adapterName)") }
            throw TransportError.fromErrno(e, "HCIGETDEVINFO \(adapterName)")
        }
        return flags
    }

    /// HCIDEVDOWN: closes the adapter in the kernel (drops its connections and state).
    static func bringDown(index: UInt16) throws {
        let fd = socket(AF_BLUETOOTH, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), BTPROTO_HCI)
        guard fd >= 0 else { throw TransportError.fromErrno(errno, "socket(AF_BLUETOOTH)") }
        defer { _ = Glibc.close(fd) }
        guard cbt_hci_dev_down(fd, Int32(index)) == 0 else {
            throw TransportError.fromErrno(errno, "HCIDEVDOWN hci\(index)")
        }
    }
}

/// Exclusive access to a kernel adapter through HCI_CHANNEL_USER: the kernel steps aside
/// (bluetoothd sees the adapter vanish) and every read is one H4 packet.
public enum KernelExclusive {
    /// Opens `adapter` ("hci0") exclusively.
    ///
    /// The kernel refuses the user channel with EBUSY while the adapter is up and managed
    /// (powered by bluetoothd or `hciconfig up`); an adapter that is down, or only up for the
    /// kernel's initial setup with auto-off pending, is granted. With `bringDownIfUp` the adapter is
    /// first closed with HCIDEVDOWN, which takes it away from whoever powered it.
    public static func open(adapter: String, bringDownIfUp: Bool = false) throws -> FileDescriptorTransport {
        guard let index = KernelAdapters.index(of: adapter) else {
            throw TransportError(.badSpec, "not a kernel adapter name: \(adapter) (expected hciN)")
        }
        let fd: Int32
        do {
            fd = try KernelHCISocket.open(device: index, channel: Int32(CBT_HCI_CHANNEL_USER), adapterName: adapter)
        } catch let error as TransportError where error.kind == .adapterBusy && bringDownIfUp {
            try KernelHCISocket.bringDown(index: index)
            fd = try KernelHCISocket.open(device: index, channel: Int32(CBT_HCI_CHANNEL_USER), adapterName: adapter)
        }
        return try FileDescriptorTransport(
            name: "\(adapter) (exclusive)", fd: fd, framer: H4DatagramFramer(),
            readBufferSize: 65536 + 8, whenFull: .drop)
    }
}
