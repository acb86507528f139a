import Foundation

/// The service manager's notification protocol (systemd, sd_notify(3)): one datagram per message to the AF_UNIX
/// socket named by `$NOTIFY_SOCKET` (a leading `@` names an abstract socket), each message `KEY=value` lines:
/// `READY=1` once the gateway runs, `WATCHDOG=1` while it makes progress (`WatchdogSec=` in the unit; systemd passes
/// the interval as `$WATCHDOG_USEC`, and `$WATCHDOG_PID` when it is meant for one process), `STATUS=` in words,
/// `STOPPING=1`. Without `$NOTIFY_SOCKET` (not started by systemd, `Type=exec`) every call does nothing.
public struct ServiceManagerNotifier: Sendable {
    /// The socket's path, or nil when there is no service manager to tell.
    public let socketPath: String?
    /// How often the manager expects `WATCHDOG=1`, at the latest; nil when it does not watch.
    public let watchdogInterval: Duration?

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        let path = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        socketPath = path
        // sd_watchdog_enabled(3): the interval is for us unless WATCHDOG_PID names another process.
        let forUs = environment["WATCHDOG_PID"].map { Int32($0) == getpid() } ?? true
        if path != nil, forUs, let usec = environment["WATCHDOG_USEC"].flatMap(UInt64.init), usec > 0 {
            watchdogInterval = .microseconds(usec)
        } else {
            watchdogInterval = nil
        }
    }

    /// Sends `message` (e.g. "READY=1\nSTATUS=scanning"); returns whether it was sent.
    @discardableResult
    public func notify(_ message: String) -> Bool {
        guard let socketPath else { return false }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var name = Array(socketPath.utf8)
        if name.first == UInt8(ascii: "@") { name[0] = 0 }  // abstract namespace
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard name.count < capacity else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { p in
            p.copyBytes(from: name)
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + name.count + (name.first == 0 ? 0 : 1))
        let bytes = Array(message.utf8)
        let sent = withUnsafePointer(to: &address) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { a in
                sendto(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL), a, length)
            }
        }
        return sent == bytes.count
    }
}
