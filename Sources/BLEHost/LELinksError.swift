/// Why an ATT PDU could not be sent over an LE link: a value with a code.
public struct LELinkError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let raw: String
        public var description: String { raw }
        /// The link ended (Disconnection Complete), was dropped by its bearer, or the transport ended.
        public static let linkClosed = Code(raw: "link closed")
        /// The link's send queue is full: the controller is not taking packets as fast as they come.
        public static let queueFull = Code(raw: "send queue full")
        /// The PDU does not fit one L2CAP basic frame (Length is 16 bits, Vol 3, Part A, §3.1).
        public static let tooLong = Code(raw: "PDU too long")
    }

    public let code: Code
    public let handle: UInt16

    public init(code: Code, handle: UInt16) {
        self.code = code
        self.handle = handle
    }

    public var description: String {
        "LE link 0x\(String(handle, radix: 16, uppercase: true)): \(code)"
    }
}
