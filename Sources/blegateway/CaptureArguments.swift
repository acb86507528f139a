import ArgumentParser
import BLEHost
import BLETransport
import Foundation

/// `--capture FILE` and `--capture-keys`, the same in `run`, `scan` and `hcidump`.
struct CaptureArguments: ParsableArguments {
    @Option(help: "Also write the HCI traffic to this btsnoop file (replay it with --device file:PATH).")
    var capture: String?

    @Flag(
        help: """
            Keep pairing keys in the capture (LTK, IRK, CSRK, EDIV/Rand, resolving-list IRKs); by default their \
            octets are zeroed, since a capture is passed around to debug and a phone's IRK follows it everywhere.
            """)
    var captureKeys = false

    /// Sets `options` for the capture (to `path`, or the given file) and says once when keys will be kept.
    func apply(to options: inout TransportOptions, path: String? = nil) {
        options.capturePath = path ?? capture
        options.captureRedaction = captureKeys ? nil : CaptureRedaction.redact
    }

    func validate() throws {
        if captureKeys && capture == nil { throw ValidationError("--capture-keys goes with --capture FILE") }
        if captureKeys, let capture {
            let warning = "warning: \(capture) will hold pairing keys in the clear (--capture-keys); share it with care"
            FileHandle.standardError.write(Data((warning + "\n").utf8))
        }
    }
}
