import BLEDomain
import Testing

@testable import BLEConfiguration
@testable import BLEGateway

/// `adapter:`: binding by address, a second adapter, and the recovery ladder's policy.
@Suite struct AdapterConfigurationTests {
    @Test func theLadderPolicyAndTheSecondAdapterAreRead() throws {
        var r = YAMLConfigurationReader()
        let c = try r.read(
            """
            adapter:
              device: hci0
              address: "00:1b:dc:f0:00:01"
              second_device: hci1
              second_address: 00:1B:DC:F0:00:02
              handback_s: 20
              silence_timeout_s: 90
              max_backoff_s: 10
              allow_rfkill_unblock: true
              allow_usb_reset: true
            """)
        #expect(r.warnings.isEmpty, "\(r.warnings)")
        #expect(c.adapter.address == "00:1B:DC:F0:00:01", "normalised as the kernel prints it")
        #expect(c.adapter.secondDevice == "hci1" && c.adapter.secondAddress == "00:1B:DC:F0:00:02")
        #expect(c.adapter.handbackSeconds == 20)
        let l = c.adapter.lifecycle
        #expect(l.silenceTimeout == .seconds(90) && l.maxBackoff == .seconds(10))
        #expect(l.allowRfkillUnblock && l.allowUSBReset)
    }

    @Test func theDefaultsAreTheLaddersDefaults() {
        #expect(GatewayConfiguration().adapter.lifecycle == AdapterLifecycle.Configuration())
    }

    @Test(arguments: [
        ("adapter:\n  address: 00:1B:DC\n", "adapter.address", "AA:BB:CC:DD:EE:FF"),
        ("adapter:\n  device: hci0\n  second_device: hci0\n", "adapter.second_device", "must differ"),
        ("adapter:\n  mode: shared\n  second_device: hci1\n", "adapter.second_device", "exclusive"),
        ("adapter:\n  device: file:/tmp/c.btsnoop\n  second_device: hci1\n", "adapter.device", "capture"),
        ("adapter:\n  second_address: 00:1B:DC:F0:00:02\n", "adapter.second_address", "second_device"),
        ("adapter:\n  second_device: usb1\n", "adapter.second_device", "expected hciN"),
        ("adapter:\n  silence_timeout_s: 0\n", "adapter.silence_timeout_s", ""),
        ("adapter:\n  device: unix:/run/c.sock\n  mode: shared\n", "adapter.mode", "needs a kernel adapter (hciN)"),
        ("adapter:\n  mode: shared\n  device: tcp:127.0.0.1:4500\n", "adapter.mode", "use exclusive mode"),
    ])
    func badAdapterSettingsAreClearErrors(yaml: String, path: String, says: String) {
        var r = YAMLConfigurationReader()
        #expect {
            try r.read(yaml)
        } throws: { e in
            let c = e as? ConfigurationError
            return c?.path == path && (says.isEmpty || c?.message.contains(says) == true)
        }
    }

    /// `run --mode shared` overrides the file after it was read: the same refusal, by the key it overrides.
    @Test func aSharedModeGivenAfterTheFileIsRefusedForAControllerOnASocket() {
        var c = GatewayConfiguration()
        c.adapter.device = "unix:/run/c.sock"
        c.adapter.mode = .shared
        #expect {
            try ConfigurationLoader.validate(c)
        } throws: { e in
            (e as? ConfigurationError)?.path == "adapter.mode" && "\(e)".contains("unix:/run/c.sock")
        }
        c.adapter.device = "hci0"
        #expect(throws: Never.self) { try ConfigurationLoader.validate(c) }
    }
}
