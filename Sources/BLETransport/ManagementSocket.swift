import CBluetoothShim
import Foundation

/// A status of the management interface (BlueZ doc/mgmt-api.txt, "Error Codes"): an open set, by number and name.
public struct ManagementStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let success = ManagementStatus(rawValue: 0x00)
    public static let unknownCommand = ManagementStatus(rawValue: 0x01)
    public static let failed = ManagementStatus(rawValue: 0x03)
    public static let busy = ManagementStatus(rawValue: 0x0A)
    public static let rejected = ManagementStatus(rawValue: 0x0B)
    public static let notSupported = ManagementStatus(rawValue: 0x0C)
    public static let invalidParameters = ManagementStatus(rawValue: 0x0D)
    public static let notPowered = ManagementStatus(rawValue: 0x0F)
    public static let invalidIndex = ManagementStatus(rawValue: 0x11)
    public static let rfkilled = ManagementStatus(rawValue: 0x12)
    public static let permissionDenied = ManagementStatus(rawValue: 0x14)

    public var description: String {
        let name: String =
            switch self {
            case .success: "Success"
            case .unknownCommand: "Unknown Command"
            case .failed: "Failed"
            case .busy: "Busy"
            case .rejected: "Rejected"
            case .notSupported: "Not Supported"
            case .invalidParameters: "Invalid Parameters"
            case .notPowered: "Not Powered"
            case .invalidIndex: "Invalid Index"
            case .rfkilled: "RFKilled"
            case .permissionDenied: "Permission Denied"
            default: "unknown"
            }
        return "mgmt status 0x\(upperHex(rawValue, digits: 2)) \(name)"
    }
}

/// A management command the kernel answered with a failure.
public struct ManagementError: Error, CustomStringConvertible, Sendable {
    public var command: String
    public var status: ManagementStatus
    public var description: String { "\(command) failed: \(status)" }
}

/// A management socket (HCI_CHANNEL_CONTROL) for commands that are answered: each `perform` sends one and returns
/// once its Command Complete (or Command Status) arrives, read by one reader thread. Beside bluetoothd, which has
/// its own; the kernel answers each socket's commands on that socket.
public final class ManagementSocket: @unchecked Sendable {
    private let descriptor: OwnedDescriptor
    private let lock = NSLock()
    /// One command of each opcode in flight: its answer's waiter.
    private var waiting: [UInt16: CheckedContinuation<(ManagementStatus, [UInt8]), any Error>] = [:]
    private var ended: (any Error)?

    public init() throws {
        let fd = try KernelHCISocket.open(
            device: KernelHCISocket.noDevice, channel: Int32(CBT_HCI_CHANNEL_CONTROL),
            adapterName: "the management channel")
        descriptor = try OwnedDescriptor(fd)
        let thread = Thread { [self] in readLoop() }
        thread.name = "mgmt commands"
        thread.start()
    }

    deinit { descriptor.close() }

    /// Sends `code` for the adapter `index` and returns the Return_Parameters of its Command Complete; a failure
    /// status throws `ManagementError` naming `name`.
    public func perform(_ code: UInt16, _ name: String, index: UInt16, _ parameters: [UInt8] = []) async throws
        -> [UInt8]
    {
        let (status, returned) = try await withCheckedThrowingContinuation {
            (c: CheckedContinuation<(ManagementStatus, [UInt8]), any Error>) in
            let refusal: (any Error)? = lock.withLock {
                if let ended { return ended }
                if waiting[code] != nil {
                    return TransportError(.adapterBusy, "\(name): the same command is already waiting for its answer")
                }
                waiting[code] = c
                return nil
            }
            if let refusal { return c.resume(throwing: refusal) }
            do {
                let message = MgmtMessage(code: code, index: index, parameters: parameters)
                try descriptor.writeAll(message.bytes, what: "write to the management socket")
            } catch {
                // Not sent: nothing will answer it. Resumed only if the reader did not take it meanwhile.
                lock.withLock { waiting.removeValue(forKey: code) }?.resume(throwing: error)
            }
        }
        guard status == .success else { throw ManagementError(command: name, status: status) }
        return returned
    }

    public func close() { descriptor.close() }

    private func readLoop() {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 8)
        defer {
            buffer.deallocate()
            descriptor.release()
        }
        var failure: any Error = TransportError(.closed, "the management socket closed")
        do {
            while let n = try descriptor.read(into: buffer), n > 0 {
                guard let m = MgmtMessage.parse(buffer[0..<n]),
                    m.code == Mgmt.commandComplete || m.code == Mgmt.commandStatus
                else { continue }
                var c = ByteCursor(m.parameters)
                guard let opcode = c.readLE16(), let status = c.readU8() else { continue }
                let rest = Array(m.parameters.dropFirst(3))
                // A Command Status that says success is not the end: the Command Complete follows.
                if m.code == Mgmt.commandStatus && status == ManagementStatus.success.rawValue { continue }
                lock.withLock { waiting.removeValue(forKey: opcode) }?
                    .resume(returning: (ManagementStatus(rawValue: status), rest))
            }
        } catch {
            failure = error
        }
        let left: [CheckedContinuation<(ManagementStatus, [UInt8]), any Error>] = lock.withLock {
            ended = failure
            defer { waiting = [:] }
            return Array(waiting.values)
        }
        for c in left { c.resume(throwing: failure) }
    }
}
