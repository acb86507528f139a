// swift-tools-version:5.3
// libFuzzer harnesses for every parser that takes bytes from outside: `make fuzz FUZZ_SECONDS=60`; `make test`
// runs each for a bounded time over the seeds committed here.
// Built with `-sanitize=fuzzer,address -parse-as-library`; libFuzzer supplies `main`.
import PackageDescription

let package = Package(
    name: "Fuzz",
    dependencies: [
        .package(name: "BLEGateway", path: "..")
    ],
    targets: [
        .target(
            name: "FuzzHCIParsers",
            dependencies: [.product(name: "BLEParsers", package: "BLEGateway")]
        ),
        .target(
            name: "FuzzHostParsers",
            dependencies: [.product(name: "BLEParsers", package: "BLEGateway")]
        ),
        // The configuration module alone (Yams' libyaml and swift-crypto, instrumented), not the gateway.
        .target(
            name: "FuzzConfigParsers",
            dependencies: [.product(name: "BLEConfigurationKit", package: "BLEGateway")]
        ),
        // What a client on the network sends the ESPHome API: frames, the Noise handshake, the requests.
        .target(
            name: "FuzzESPHomeParsers",
            dependencies: [.product(name: "BLEESPHomeKit", package: "BLEGateway")]
        ),
        // What the broker hands the fleet service: its model, payload reader, presence and site description.
        .target(
            name: "FuzzFleetParsers",
            dependencies: [.product(name: "BLEFleetKit", package: "BLEGateway")]
        ),
    ]
)
