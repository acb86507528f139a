import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Ports of 127.0.0.1 for the brokers, servers and gateways the tests start.
public enum Loopback {
    /// A port the kernel just handed out on 127.0.0.1 (bound, then released).
    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ToolFailure(message: "socket: errno \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw ToolFailure(message: "bind: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// A blocking TCP socket connected to `port` of 127.0.0.1; with `receiveBuffer`, the kernel's receive buffer is
    /// set that small first (so a peer that writes to a reader who does not read fills it soon). The caller closes it.
    public static func openConnection(port: Int, receiveBuffer: Int32? = nil) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ToolFailure(message: "socket: errno \(errno)") }
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else {
            let e = errno
            close(fd)
            throw ToolFailure(message: "connect to 127.0.0.1:\(port): errno \(e)")
        }
        return fd
    }

    /// A listening socket on a free port of 127.0.0.1 that never accepts: the kernel completes each TCP handshake, and
    /// nothing is ever said on the connection (a broker that takes the connection and never answers CONNECT, a TLS
    /// port that never answers the handshake). The caller closes it.
    public static func silentListener() throws -> (descriptor: Int32, port: Int) {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw ToolFailure(message: "socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { a in
                bind(listener, a, length) == 0 && listen(listener, 4) == 0 && getsockname(listener, a, &length) == 0
            }
        }
        guard listening else {
            close(listener)
            throw ToolFailure(message: "listen on 127.0.0.1: errno \(errno)")
        }
        return (listener, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// Whether something accepts TCP connections on `port` of 127.0.0.1 now.
    public static func accepts(port: Int) -> Bool {
        guard let fd = try? openConnection(port: port) else { return false }
        close(fd)
        return true
    }
}
