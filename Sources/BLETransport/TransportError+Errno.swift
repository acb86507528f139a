#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension TransportError {
    /// Maps a failed system call's errno to a kind the adapter lifecycle can act on: a link that is
    /// gone (unplugged controller, peer closed the socket) is `.closed`; a missing capability,
    /// a busy or missing adapter keep their own kinds; anything else is `.io`.
    public static func fromErrno(_ code: Int32, _ what: String) -> TransportError {
        let text = String(cString: strerror(code))
        let kind: Kind
        switch code {
        case ENODEV, ENETDOWN, EPIPE, ECONNRESET, EHOSTDOWN, ESHUTDOWN, ENXIO: kind = .closed
        case EPERM, EACCES: kind = .permissionDenied
        case EBUSY: kind = .adapterBusy
        case ERFKILL: kind = .rfkillBlocked
        case EAFNOSUPPORT, EPROTONOSUPPORT, EOPNOTSUPP: kind = .unsupported
        default: kind = .io
        }
        return TransportError(kind, errno: code, "\(what): \(text) (errno \(code))")
    }
}
