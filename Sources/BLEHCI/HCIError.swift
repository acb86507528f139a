import BLETransport

/// Why an HCI command did not produce its result: a value with a code, carrying the command's opcode
/// and, when the controller answered, its status — numbers and names both, as the specification writes them:
/// "LE Set Scan Enable (0x200C) failed: HCI status 0x0C Command Disallowed".
public struct HCIError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let raw: String
        public var description: String { raw }
        /// The controller answered with a non-zero status.
        public static let commandFailed = Code(raw: "command failed")
        /// No Command Complete/Status arrived within the bound: the controller may be stuck.
        public static let timedOut = Code(raw: "command timed out")
        /// The answer was too short for the command's return parameters.
        public static let malformedResponse = Code(raw: "malformed response")
        /// The transport ended before the answer arrived, or had already ended.
        public static let transportClosed = Code(raw: "transport closed")
        /// The transport refused the packet (for a shared-mode transport: sending is unsupported).
        public static let sendFailed = Code(raw: "send failed")
    }

    public let code: Code
    public let opcode: HCIOpcode?
    public let status: HCIStatus?
    /// Free text for the cases without a status (the transport's message, the timeout's bound).
    public let detail: String?

    public init(code: Code, opcode: HCIOpcode?, status: HCIStatus? = nil, detail: String? = nil) {
        self.code = code
        self.opcode = opcode
        self.status = status
        self.detail = detail
    }

    public static func commandFailed(_ opcode: HCIOpcode, _ status: HCIStatus) -> HCIError {
        HCIError(code: .commandFailed, opcode: opcode, status: status)
    }
    public static func timedOut(_ opcode: HCIOpcode, after bound: Duration) -> HCIError {
        HCIError(code: .timedOut, opcode: opcode, detail: "no Command Complete or Command Status within \(bound)")
    }
    public static func malformedResponse(_ opcode: HCIOpcode) -> HCIError {
        HCIError(code: .malformedResponse, opcode: opcode)
    }
    public static func transportClosed(_ opcode: HCIOpcode?) -> HCIError {
        HCIError(code: .transportClosed, opcode: opcode)
    }
    public static func sendFailed(_ opcode: HCIOpcode, _ detail: String) -> HCIError {
        HCIError(code: .sendFailed, opcode: opcode, detail: detail)
    }

    public var description: String {
        let subject = opcode.map { "\($0)" } ?? "HCI"
        switch code {
        case .commandFailed: return "\(subject) failed: \(status.map { "\($0)" } ?? "unknown status")"
        case .timedOut: return "\(subject) timed out: \(detail ?? "")"
        case .malformedResponse: return "\(subject): malformed return parameters"
        case .transportClosed: return "\(subject): transport closed"
        default: return "\(subject): \(code)\(detail.map { ": \($0)" } ?? "")"
        }
    }
}
