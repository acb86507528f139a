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
