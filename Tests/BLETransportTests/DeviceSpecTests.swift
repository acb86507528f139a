import Testing

@testable import BLETransport

@Suite struct DeviceSpecTests {
    @Test(arguments: [
        ("hci0", DeviceSpec.kernel(adapter: "hci0")),
        ("hci12", .kernel(adapter: "hci12")),
        ("unix:/run/blegw/ctl.sock", .unix(path: "/run/blegw/ctl.sock")),
        ("tcp:localhost:4500", .tcp(host: "localhost", port: 4500)),
        ("tcp:[::1]:4500", .tcp(host: "::1", port: 4500)),
        ("serial:/dev/ttyUSB0", .serial(path: "/dev/ttyUSB0", baud: 115_200, flowControl: false)),
        ("serial:/dev/ttyAMA0@921600,rtscts", .serial(path: "/dev/ttyAMA0", baud: 921_600, flowControl: true)),
        ("file:captures/office.btsnoop", .file(path: "captures/office.btsnoop")),
    ])
    func parsesEverySchemeAndPrintsItBack(text: String, spec: DeviceSpec) throws {
        let parsed = try DeviceSpec(parsing: text)
        #expect(parsed == spec)
        #expect(try DeviceSpec(parsing: parsed.description) == spec)
    }

    @Test(arguments: [
        ("hci", "number"), ("hcix", "number"), ("hci-1", "number"), ("hci01", "number"),
        ("/dev/ttyUSB0", "no scheme"), ("bt:hci0", "unknown scheme"),
        ("unix:", "missing socket path"), ("file:", "missing capture path"),
        ("tcp:localhost", "missing :PORT"), ("tcp::4500", "missing host"), ("tcp:host:0", "port"),
        ("tcp:host:70000", "port"), ("tcp:[::1", "unclosed"),
        ("serial:ttyUSB0", "absolute path"), ("serial:/dev/ttyUSB0@fast", "baud"),
        ("serial:/dev/ttyUSB0@12345", "unsupported baud"),
    ])
    func rejectsMalformedSpecsSayingWhy(text: String, why: String) {
        #expect {
            try DeviceSpec(parsing: text)
        } throws: {
            guard let e = $0 as? TransportError else { return false }
            return e.kind == .badSpec && e.message.contains(why) && e.message.contains(text)
        }
    }

    @Test func kernelAdapterIndexIsItsNumber() {
        #expect(KernelAdapters.index(of: "hci3") == 3)
        #expect(KernelAdapters.index(of: "eth0") == nil)
    }

    /// Shared mode listens beside the kernel's stack: a controller on a socket or a serial line has none to share
    /// with, so it is refused by name before anything is opened (it once brought the controller up and scanned).
    @Test(arguments: ["unix:/run/blegw/ctl.sock", "tcp:localhost:4500", "serial:/dev/ttyAMA0@115200"])
    func sharedModeRefusesAControllerTheKernelDoesNotHave(text: String) throws {
        let spec = try DeviceSpec(parsing: text)
        #expect(AdapterMode.shared.refusal(for: spec)?.contains("needs a kernel adapter (hciN)") == true)
        #expect(AdapterMode.exclusive.refusal(for: spec) == nil)
        #expect {
            try openTransport(spec, mode: .shared, clock: SystemClock(), options: TransportOptions())
        } throws: { e in
            (e as? TransportError)?.kind == .badSpec && "\(e)".contains(spec.description)
        }
    }

    @Test func sharedModeTakesKernelAdaptersAndCaptures() throws {
        #expect(AdapterMode.shared.refusal(for: .kernel(adapter: "hci0")) == nil)
        #expect(AdapterMode.shared.refusal(for: .file(path: "/tmp/c.btsnoop")) == nil)
    }
}
