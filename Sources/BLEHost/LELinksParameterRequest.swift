import BLEHCI
import BLETransport

/// The link-layer way for a peripheral to ask for new connection parameters (LL_CONNECTION_PARAM_REQ, Vol 6,
/// Part B, §5.1.7): when both sides support it the controller asks the host with the LE Remote Connection
/// Parameter Request event, and the host must reply, or the procedure times out and the link is lost. The bring-up
/// unmasks that event, so the links answer it with the same ranges as the L2CAP request (`L2CAPLESignaling`).
public enum LERemoteConnectionParameterRequest {
    /// §7.7.65.6 LE Remote Connection Parameter Request (after the subevent code): Connection_Handle (2),
    /// Interval_Min (2), Interval_Max (2), Max_Latency (2), Timeout (2).
    public static func parse(_ params: ArraySlice<UInt8>) -> (handle: UInt16, parameters: LEConnectionParameters)? {
        var c = ByteCursor(params)
        guard let h = c.readLE16(), let iMin = c.readLE16(), let iMax = c.readLE16(), let latency = c.readLE16(),
            let timeout = c.readLE16()
        else { return nil }
        return (h & 0x0FFF, LEConnectionParameters(
            intervalMin: iMin, intervalMax: iMax, maxLatency: latency, supervisionTimeout: timeout))
    }

    /// The command that answers the request: the Reply with the requested parameters when they are in range,
    /// the Negative Reply with 0x3B Unacceptable Connection Parameters otherwise.
    public static func answer(handle: UInt16, _ p: LEConnectionParameters) -> any HCICommand {
        L2CAPLESignaling.inRange(p)
            ? LERemoteConnectionParameterRequestReplyCommand(handle: handle, parameters: p)
            : LERemoteConnectionParameterRequestNegativeReplyCommand(handle: handle)
    }
}

/// §7.8.31 HCI_LE_Remote_Connection_Parameter_Request_Reply (OGF 0x08, OCF 0x0020). Command parameters:
/// Connection_Handle (2), Interval_Min (2), Interval_Max (2), Max_Latency (2), Timeout (2), Min_CE_Length (2),
/// Max_CE_Length (2). Return parameters: Status (1), Connection_Handle (2).
public struct LERemoteConnectionParameterRequestReplyCommand: HCICommand {
    public static let opcode = HCIOpcode(ogf: 0x08, ocf: 0x0020)
    public var handle: UInt16
    public var parameters: LEConnectionParameters

    public init(handle: UInt16, parameters: LEConnectionParameters) {
        self.handle = handle
        self.parameters = parameters
    }

    public func writeParameters(to w: inout ByteWriter) {
        w.le16(handle & 0x0FFF)
        w.le16(parameters.intervalMin)
        w.le16(parameters.intervalMax)
        w.le16(parameters.maxLatency)
        w.le16(parameters.supervisionTimeout)
        w.le16(parameters.minCELength)
        w.le16(parameters.maxCELength)
    }

    public static func parseReturnParameters(_ c: inout ByteCursor) -> UInt16? { c.readLE16().map { $0 & 0x0FFF } }
}

/// §7.8.32 HCI_LE_Remote_Connection_Parameter_Request_Negative_Reply (OGF 0x08, OCF 0x0021). Command parameters:
/// Connection_Handle (2), Reason (1). Return parameters: Status (1), Connection_Handle (2).
public struct LERemoteConnectionParameterRequestNegativeReplyCommand: HCICommand {
    public static let opcode = HCIOpcode(ogf: 0x08, ocf: 0x0021)
    public var handle: UInt16
    /// 0x3B Unacceptable Connection Parameters (Vol 1, Part F).
    public var reason: HCIStatus

    public init(handle: UInt16, reason: HCIStatus = .unacceptableConnectionParameters) {
        self.handle = handle
        self.reason = reason
    }

    public func writeParameters(to w: inout ByteWriter) {
        w.le16(handle & 0x0FFF)
        w.u8(reason.rawValue)
    }

    public static func parseReturnParameters(_ c: inout ByteCursor) -> UInt16? { c.readLE16().map { $0 & 0x0FFF } }
}
