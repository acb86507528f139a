/// Faults of the controller chip itself (`command_errors`, `le_unsupported`): unlike the controller's HCI state they
/// survive HCI_Reset, a power cycle and a new host, because they are the hardware's (or its firmware's), not the
/// host's doing.
public struct SimControllerFaults: Sendable, Hashable {
    /// `command_errors`: every command the controller implements is refused with this status, in the event that
    /// would have answered it; nothing the command asked for is done.
    public var commandErrors: SimStatus?
    /// `le_unsupported`: a BR/EDR-only controller. Its LE commands are unknown to it, and its feature and command
    /// bit maps say so.
    public var leUnsupported = false

    public init() {}
}

extension SimCommandTable {
    /// Whether a controller without LE lacks `opcode`: every command of the LE Controller group (OGF 0x08,
    /// Core v5.4, Vol 4, Part E, §7.8), and Write LE Host Support (§7.3.79), which sets the "LE Supported (Host)"
    /// bit that only a controller doing both BR/EDR and LE has (Vol 2, Part C, §3.3, bit 65 of page 1).
    static func needsLE(_ opcode: SimOpcode) -> Bool {
        opcode.ogf == SimOpcode.leControllerGroup || opcode == .writeLEHostSupported
    }

    /// Supported_Commands of a BR/EDR-only controller: the table's bits, less those of the LE commands.
    public static let supportedCommandsWithoutLE: [UInt8] = {
        var bits = [UInt8](repeating: 0, count: 64)
        for (op, e) in entries where !needsLE(op) { bits[e.supportedOctet] |= 1 << UInt8(e.supportedBit) }
        return bits
    }()
}

extension VirtualController {
    /// The answer the controller's faults give `opcode` instead of carrying it out, or nil when there is none.
    ///
    /// A BR/EDR-only controller answers an LE command as any command it does not know: Unknown HCI Command (0x01)
    /// in Command Status, as for an opcode missing from the table (§4.5). Under `command_errors` each command is
    /// refused in its own answer event: Command Complete whose return parameters are the status alone, or Command
    /// Status. (§4.5 lets an error's return parameters fall short, the status first; it asks for an echoed handle
    /// too, which Read RSSI and LE Set Data Length leave out here — the gateway reads the status and stops.)
    func refusal(of opcode: SimOpcode, _ entry: SimCommandEntry) -> [[UInt8]]? {
        if faults.leUnsupported, SimCommandTable.needsLE(opcode) {
            return [SimEvents.commandStatus(.unknownCommand, opcode)]
        }
        guard let status = faults.commandErrors else { return nil }
        switch entry.answer {
        case .commandComplete: return [SimEvents.commandComplete(opcode, [status.rawValue])]
        case .commandStatus: return [SimEvents.commandStatus(status, opcode)]
        }
    }
}
