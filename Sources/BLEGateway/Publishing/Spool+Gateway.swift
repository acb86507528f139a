import BLEConfiguration
import BLESpool
import Foundation
import Logging

extension SpoolConfiguration {
    /// The spool's settings from the gateway's `spool:` section (megabytes and milliseconds as the file writes them).
    init(gateway s: GatewayConfiguration.Spool) {
        self.init(path: s.path)
        maxBytes = Int(s.maxMegabytes * 1_048_576)
        reserveBytes = Int(s.reserveMegabytes * 1_048_576)
        commitWindow = .milliseconds(Int64(s.commitWindowMS))
        urgentCommitWindow = .microseconds(Int64(s.valueCommitWindowMS * 1000))
    }
}

extension Spool {
    /// The environment variable that makes a gateway skip its commit fsync, for the power-loss drill's variant only.
    static let brokenDurabilityVariable = "BLEGATEWAY_TEST_SPOOL_WITHOUT_FSYNC"

    /// The directory the spool's file is in; a bare file name (`--spool gw.sqlite`) lives in the working directory.
    /// The remote configuration's store sits beside it.
    static func directory(of s: GatewayConfiguration.Spool) -> String {
        let parent = (s.path as NSString).deletingLastPathComponent
        return parent.isEmpty ? "." : parent
    }

    /// The gateway's spool, its directory made if need be, opened with what it found logged: a file set aside or a
    /// salvage resumed at open, a quarantine while running, and (at debug level) the seqs each commit made durable,
    /// which is what a reader of the log may hold the spool to after a power cut (Tests/kernel/powerloss.sh does).
    static func open(gateway s: GatewayConfiguration.Spool, logger: Logger) throws -> Spool {
        try FileManager.default.createDirectory(atPath: directory(of: s), withIntermediateDirectories: true)
        var configuration = SpoolConfiguration(gateway: s)
        if ProcessInfo.processInfo.environment[brokenDurabilityVariable] == "1" {
            // The power-loss drill's proof that it can fail (Tests/kernel/powerloss.sh, POWER_VARIANT=nofsync): a
            // gateway that skips its commit fsync must lose readings it called durable. Never a setting.
            configuration.durability = .off
            logger.critical("spool: \(brokenDurabilityVariable)=1: commits are NOT fsync'd; a power cut loses readings")
        }
        let spool = try Spool(configuration: configuration)
        let opened = spool.statistics.openReport
        if opened.corruption != nil || opened.resumedSalvageOf != nil || opened.setAsideRemoved > 0 {
            logger.error("spool: \(opened)")
        }
        spool.observeQuarantines { report in
            logger.error("spool: set aside while running, continuing on a fresh file: \(report)")
        }
        spool.observeCommits { seqs in
            logger.debug("spool: seq \(seqs.lowerBound)...\(seqs.upperBound) durable")
        }
        return spool
    }
}
