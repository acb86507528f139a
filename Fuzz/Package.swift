// swift-tools-version:5.3
// libFuzzer harness for the wire-format parsers: `make fuzz FUZZ_SECONDS=60`.
// Built with `-sanitize=fuzzer,address -parse-as-library`; libFuzzer supplies `main`.
import PackageDescription

let package = Package(
    name: "Fuzz",
    dependencies: [
        .package(name: "BLEGateway", path: ".."),
    ],
    targets: [
        .target(
            name: "FuzzHCIParsers",
            dependencies: [.product(name: "BLEParsers", package: "BLEGateway")]
        ),
    ]
)
