#if canImport(Glibc)
    import Glibc
#endif

extension TransportError.Kind {
    /// The peer could not be reached or refused the link (ECONNREFUSED, EHOSTUNREACH, ECONNRESET…).
    public static let connectionFailed = TransportError.Kind(raw: "connection failed")
    /// No answer within the time allowed (ETIMEDOUT, or our own deadline on a connect).
    public static let timedOut = TransportError.Kind(raw: "timed out")
}

/// Errors of the kernel L2CAP sockets, each naming the errno (symbol, meaning and number) and, where
/// the cause is usually the same, what to do about it.
enum L2CAPError {
    /// errno symbols for the codes the Bluetooth socket layer returns (net/bluetooth/lib.c `bt_to_errno`
    /// maps HCI status codes onto these), so a message says "ECONNREFUSED", not only "Connection refused".
    static let names: [Int32: String] = [
        EPERM: "EPERM", ENOENT: "ENOENT", EINTR: "EINTR", EIO: "EIO", ENXIO: "ENXIO", EBADF: "EBADF",
        EAGAIN: "EAGAIN", ENOMEM: "ENOMEM", EACCES: "EACCES", EBUSY: "EBUSY", ENODEV: "ENODEV", EINVAL: "EINVAL",
        ENOSPC: "ENOSPC", EPIPE: "EPIPE", ENOSYS: "ENOSYS", EBADFD: "EBADFD", EPROTO: "EPROTO",
        EMSGSIZE: "EMSGSIZE", EPROTONOSUPPORT: "EPROTONOSUPPORT", EOPNOTSUPP: "EOPNOTSUPP",
        EAFNOSUPPORT: "EAFNOSUPPORT", EADDRINUSE: "EADDRINUSE", EADDRNOTAVAIL: "EADDRNOTAVAIL",
        ENETDOWN: "ENETDOWN", ECONNABORTED: "ECONNABORTED", ECONNRESET: "ECONNRESET", ENOBUFS: "ENOBUFS",
        EISCONN: "EISCONN", ENOTCONN: "ENOTCONN", ESHUTDOWN: "ESHUTDOWN", ETIMEDOUT: "ETIMEDOUT",
        ECONNREFUSED: "ECONNREFUSED", EHOSTDOWN: "EHOSTDOWN", EHOSTUNREACH: "EHOSTUNREACH",
        EALREADY: "EALREADY", EINPROGRESS: "EINPROGRESS", EKEYREJECTED: "EKEYREJECTED",
    ]

    /// "ECONNREFUSED, Connection refused (errno 111)"; unknown codes by number.
    static func describe(_ code: Int32) -> String {
        "\(names[code] ?? "errno \(code)"), \(String(cString: strerror(code))) (errno \(code))"
    }

    /// What usually causes `code` on an LE L2CAP socket; nil when there is nothing useful to add.
    static func hint(_ code: Int32, adapter: String) -> String? {
        switch code {
        case ECONNREFUSED:
            "the controller would not start the connection; is LE enabled on the adapter"
                + " (`btmgmt -i \(adapter) le on`) and is it powered?"
        case EHOSTUNREACH:
            "no adapter can reach the peer: is \(adapter) up, with LE enabled?"
        case ETIMEDOUT:
            "the peer did not answer: out of range, not advertising connectably, or the address type is wrong"
        case EHOSTDOWN, ENETDOWN:
            "the adapter is down (`btmgmt -i \(adapter) power on`)"
        case EADDRINUSE:
            "another process already listens on this channel of the adapter (bluetoothd's GATT server?)"
        case EACCES, EPERM:
            "the kernel refused the socket option or address; binding ATT needs no capability, security levels may"
        default:
            nil
        }
    }

    /// A failed system call on an L2CAP socket as a `TransportError` with a kind the caller can act on.
    static func from(_ code: Int32, _ what: String, adapter: String) -> TransportError {
        let kind: TransportError.Kind
        switch code {
        case ECONNREFUSED, EHOSTUNREACH, ECONNRESET, ECONNABORTED, EHOSTDOWN, ENOTCONN: kind = .connectionFailed
        case ETIMEDOUT: kind = .timedOut
        case ENODEV: kind = .noSuchAdapter
        case ENETDOWN: kind = .adapterDown
        case EADDRINUSE, EBUSY: kind = .adapterBusy
        case EPERM, EACCES: kind = .permissionDenied
        case EAFNOSUPPORT, EPROTONOSUPPORT, EOPNOTSUPP: kind = .unsupported
        default: kind = .io
        }
        var text = "\(what): \(describe(code))"
        if let h = hint(code, adapter: adapter) { text += ": \(h)" }
        return TransportError(kind, errno: code, text)
    }
}
