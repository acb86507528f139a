import CBluetoothShim

#if canImport(Glibc)
    import Glibc
#endif

/// A pseudo-terminal pair: the slave path behaves like a UART for `serial:` (termios and all), the
/// master is the "controller" end. Lets tests, and a simulator, stand in for an H4 UART.
public struct PseudoTerminal: Sendable {
    /// The controller's end; the caller owns it and closes it.
    public let masterFD: Int32
    /// The device path to give `serial:` (e.g. /dev/pts/3).
    public let path: String

    public static func open() throws -> PseudoTerminal {
        var name = [CChar](repeating: 0, count: 128)
        let fd = cbt_open_pty(&name, name.count)
        guard fd >= 0 else { throw TransportError.fromErrno(errno, "open a pseudo-terminal") }
        return PseudoTerminal(
            masterFD: fd,
            path: String(
                decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) },
                as: UTF8.self))
    }
}
