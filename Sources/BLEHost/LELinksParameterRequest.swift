import BLEHCI

/// The link-layer way for a peripheral to ask for new connection parameters (LL_CONNECTION_PARAM_REQ, Vol 6,
/// Part B, §5.1.7): when both sides support it the controller asks the host with the LE Remote Connection
/// Parameter Request event (`HCIEvent.leRemoteConnectionParameterRequest`), and the host must reply, or the
/// procedure times out and the link is lost. The bring-up unmasks that event, so the links answer it with the same
/// ranges as the L2CAP request (`L2CAPLESignaling`).
public enum LERemoteConnectionParameterRequest {
    /// The command that answers the request: the Reply with the requested parameters when they are in range,
    /// the Negative Reply with 0x3B Unacceptable Connection Parameters otherwise.
    public static func answer(handle: UInt16, _ p: LEConnectionParameters) -> any HCICommand {
        L2CAPLESignaling.inRange(p)
            ? LERemoteConnectionParameterRequestReplyCommand(handle: handle, parameters: p)
            : LERemoteConnectionParameterRequestNegativeReplyCommand(handle: handle)
    }
}
