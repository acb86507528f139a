#if canImport(Glibc)
    import Glibc
#endif

/// Opens the H4 byte-stream transports: a listening Unix socket (a simulator, a btproxy), a TCP
/// peer (an HCI-over-TCP bridge) and a UART.
public enum H4Stream {
    /// Connects to a listening Unix stream socket at `path`.
    public static func connectUnix(path: String) throws -> FileDescriptorTransport {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TransportError.fromErrno(errno, "socket(AF_UNIX)") }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: addr.sun_path)
        guard bytes.count < capacity else {
            _ = Glibc.close(fd)
            throw TransportError(.badSpec, "unix socket path is longer than \(capacity - 1) bytes: \(path)")
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard r == 0 else {
            let e = errno
            _ = Glibc.close(fd)
            throw connectError(e, "connect to unix:\(path)")
        }
        return try FileDescriptorTransport(name: "unix:\(path)", fd: fd, framer: H4StreamFramer(), whenFull: .wait)
    }

    /// Connects to `host:port` over TCP (IPv4 or IPv6, first address that answers), with Nagle off
    /// so each command leaves at once.
    public static func connectTCP(host: String, port: UInt16) throws -> FileDescriptorTransport {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var list: UnsafeMutablePointer<addrinfo>?
        let g = getaddrinfo(host, String(port), &hints, &list)
        guard g == 0, let first = list else {
            throw TransportError(.io, "cannot resolve \(host): \(String(cString: gai_strerror(g)))")
        }
        defer { freeaddrinfo(list) }
        var lastErrno: Int32 = ECONNREFUSED
        var ai: UnsafeMutablePointer<addrinfo>? = first
        while let a = ai {
            let fd = socket(a.pointee.ai_family, a.pointee.ai_socktype, a.pointee.ai_protocol)
            if fd >= 0 {
                if connect(fd, a.pointee.ai_addr, a.pointee.ai_addrlen) == 0 {
                    var one: Int32 = 1
                    _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                    return try FileDescriptorTransport(
                        name: "tcp:\(host):\(port)", fd: fd, framer: H4StreamFramer(),
                        whenFull: .wait)
                }
                lastErrno = errno
                _ = Glibc.close(fd)
            } else {
                lastErrno = errno
            }
            ai = a.pointee.ai_next
        }
        throw connectError(lastErrno, "connect to tcp:\(host):\(port)")
    }

    /// Opens a UART in raw mode (8N1, no echo, no line discipline) at `baud`, optionally with
    /// RTS/CTS hardware flow control, which most H4 controllers expect above 115200 baud.
    public static func openSerial(path: String, baud: Int = 115_200, flowControl: Bool = false) throws
        -> FileDescriptorTransport
    {
        guard let speed = baudConstant(baud) else {
            throw TransportError(.badSpec, "unsupported baud rate \(baud) for \(path)")
        }
        let fd = open(path, O_RDWR | O_NOCTTY)
        guard fd >= 0 else {
            let e = errno
            if e == ENOENT { throw TransportError(.noSuchAdapter, errno: e, "no serial device at \(path)") }
            throw TransportError.fromErrno(e, "open \(path)")
        }
        var tio = termios()
        guard tcgetattr(fd, &tio) == 0 else {
            let e = errno
            _ = Glibc.close(fd)
            throw TransportError.fromErrno(e, "\(path) is not a terminal (tcgetattr)")
        }
        cfmakeraw(&tio)
        tio.c_cflag |= tcflag_t(CLOCAL | CREAD)
        tio.c_cflag &= ~tcflag_t(CSTOPB | PARENB)
        if flowControl { tio.c_cflag |= tcflag_t(CRTSCTS) } else { tio.c_cflag &= ~tcflag_t(CRTSCTS) }
        // VMIN 1, VTIME 0: a read returns as soon as one byte is there; the deframer reassembles.
        withUnsafeMutableBytes(of: &tio.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        cfsetispeed(&tio, speed)
        cfsetospeed(&tio, speed)
        guard tcsetattr(fd, TCSANOW, &tio) == 0 else {
            let e = errno
            _ = Glibc.close(fd)
            throw TransportError.fromErrno(e, "configure \(path) (tcsetattr)")
        }
        _ = tcflush(fd, TCIOFLUSH)
        // A UART cannot be paused: a controller on it is a live radio.
        return try FileDescriptorTransport(
            name: "serial:\(path)@\(baud)", fd: fd, framer: H4StreamFramer(),
            whenFull: .drop)
    }

    static func baudConstant(_ baud: Int) -> speed_t? {
        let table: [Int: Int32] = [
            9600: B9600, 19200: B19200, 38400: B38400, 57600: B57600, 115_200: B115200, 230_400: B230400,
            460_800: B460800, 500_000: B500000, 576_000: B576000, 921_600: B921600, 1_000_000: B1000000,
            1_500_000: B1500000, 2_000_000: B2000000, 3_000_000: B3000000, 4_000_000: B4000000,
        ]
        return table[baud].map { speed_t($0) }
    }

    private static func connectError(_ e: Int32, _ what: String) -> TransportError {
        if e == ENOENT || e == ECONNREFUSED {
            return TransportError(
                .noSuchAdapter, errno: e, "\(what): nothing is listening (\(String(cString: strerror(e))))")
        }
        return TransportError.fromErrno(e, what)
    }
}
