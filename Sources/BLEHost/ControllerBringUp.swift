import BLEHCI
import BLETransport
import Logging

/// What the host learned about its controller at bring-up.
public struct ControllerInfo: Sendable, Hashable {
    public var version: LocalVersionInformation
    public var supportedCommands: SupportedCommands?
    public var lmpFeatures: LMPFeatures
    public var leFeatures: LEFeatures
    public var address: BDAddress
    public var bufferSize: BufferSize
    public var leBufferSize: LEBufferSize

    /// LE features bit 12: scan with the extended commands and receive extended reports.
    public var supportsExtendedAdvertising: Bool { leFeatures.contains(.extendedAdvertising) }

    /// LE ACL buffers, falling back to the shared ACL buffers when the LE ones are reported as zero (§7.8.2).
    public var leACLBuffers: (length: Int, count: Int) {
        leBufferSize.leACLDataPacketLength == 0
            ? (Int(bufferSize.aclDataPacketLength), Int(bufferSize.totalNumACLDataPackets))
            : (Int(leBufferSize.leACLDataPacketLength), Int(leBufferSize.totalNumLEACLDataPackets))
    }
}

/// Brings a controller from power-on to a known state: Reset, read what it is and can do, and unmask the
/// events the gateway needs. Each step is one command, in this order (the sequence BlueZ's `hci_init` follows
/// for an LE-only controller).
public enum ControllerBringUp {
    /// Events enabled by Set Event Mask (Core v5.4, Vol 4, Part E, §7.3.1).
    public static let eventMask: HCIEventMask = [
        .disconnectionComplete, .encryptionChange, .readRemoteVersionInformationComplete, .hardwareError,
        .dataBufferOverflow, .encryptionKeyRefreshComplete, .leMeta,
    ]

    /// LE Meta subevents enabled by LE Set Event Mask (§7.8.1). With both connection-complete bits set, a
    /// controller sends only the enhanced one. LE Long Term Key Request is always answered (`LELinks`), with the
    /// Negative Reply when no pairing of ours holds the key.
    public static let leEventMask: LEEventMask = [
        .connectionComplete, .advertisingReport, .connectionUpdateComplete, .readRemoteFeaturesComplete,
        .longTermKeyRequest,
        .remoteConnectionParameterRequest, .dataLengthChange, .enhancedConnectionComplete,
        .directedAdvertisingReport, .phyUpdateComplete, .extendedAdvertisingReport, .scanTimeout,
        .channelSelectionAlgorithm,
    ]

    /// Runs the sequence. Throws the first `HCIError` (logged with the command's and status's names).
    public static func run(_ controller: HCIController, logger: Logger = Logger(label: "ble.host.bringup"))
        async throws -> ControllerInfo
    {
        func step<C: HCICommand>(_ command: C) async throws -> C.Response {
            do {
                return try await controller.execute(command)
            } catch let e as HCIError {
                logger.error("controller bring-up: \(e)")
                throw e
            }
        }
        try await step(ResetCommand())
        let version = try await step(ReadLocalVersionInformationCommand())
        // Supported Commands arrived in 1.2; an older or minimal controller may refuse it, which is no reason to stop.
        let commands = try? await controller.execute(ReadLocalSupportedCommandsCommand())
        let lmp = try await step(ReadLocalSupportedFeaturesCommand())
        let le = try await step(LEReadLocalSupportedFeaturesCommand())
        let address = try await step(ReadBDADDRCommand())
        let buffers = try await step(ReadBufferSizeCommand())
        let leBuffers: LEBufferSize
        if commands?.leReadBufferSizeV2 == true {
            leBuffers = try await step(LEReadBufferSizeV2Command())
        } else {
            leBuffers = try await step(LEReadBufferSizeCommand())
        }
        try await step(SetEventMaskCommand(eventMask))
        try await step(LESetEventMaskCommand(leEventMask))
        let info = ControllerInfo(
            version: version, supportedCommands: commands, lmpFeatures: lmp, leFeatures: le, address: address,
            bufferSize: buffers, leBufferSize: leBuffers)
        logger.info(
            """
            controller \(address) HCI version 0x\(String(version.hciVersion, radix: 16)) \
            company \(version.companyIdentifier) extended advertising \(info.supportsExtendedAdvertising)
            """
        )
        return info
    }
}
