// swift-tools-version:6.0
// BLEGateway: a Bluetooth LE to MQTT gateway for Linux boards.
//
// Layers, each importing only those before it (see docs/ARCHITECTURE.md):
//   BLETransport → BLEHCI → BLEHost → BLEDomain → BLESpool → BLEPublishing → BLEGateway → blegateway
//   BLEFleet sits beside BLEGateway, above BLEPublishing: it reads the broker, never the gateway's internals.
// BLESimulator depends only on the wire formats (BLETransport, BLEHCI's packet codecs); its L2CAP/ATT are its own.
// Each C library is imported by exactly one Swift module:
//   CBluetooth + CBluetoothShim → BLETransport, CSQLite → BLESpool,
//   CMosquitto and COpenSSL (the TLS diagnosis) → BLEPublishing.
import PackageDescription

let package = Package(
    name: "BLEGateway",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "blegateway", targets: ["blegateway"]),
        .library(name: "BLEGatewayKit", targets: ["BLEGateway"]),
        // The configuration readers alone, for the libFuzzer package in Fuzz/.
        .library(name: "BLEConfigurationKit", targets: ["BLEConfiguration"]),
        .library(name: "BLESimulator", targets: ["BLESimulator"]),
        // The fleet service's model, payload reader and site description, for the libFuzzer package in Fuzz/.
        .library(name: "BLEFleetKit", targets: ["BLEFleet"]),
        // ESPHome's framing, handshake and requests, for the libFuzzer package in Fuzz/.
        .library(name: "BLEESPHomeKit", targets: ["BLEESPHome"]),
        // The wire-format parsers alone, for the libFuzzer package in Fuzz/.
        .library(name: "BLEParsers", targets: ["BLETransport", "BLEHCI", "BLEHost", "BLEDomain"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "5.0.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.0.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.0.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.65.0"),
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
    ],
    targets: [
        // C libraries, each behind one Swift module.
        .systemLibrary(name: "CBluetooth", pkgConfig: "bluez", providers: [.apt(["libbluetooth-dev"])]),
        .target(name: "CBluetoothShim"),
        .systemLibrary(name: "CMosquitto", pkgConfig: "libmosquitto", providers: [.apt(["libmosquitto-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),

        // Layers.
        .target(name: "BLETransport", dependencies: ["CBluetooth", "CBluetoothShim"]),
        .target(name: "BLEHCI", dependencies: ["BLETransport"]),
        .target(name: "BLEHost", dependencies: [
            "BLETransport", "BLEHCI", .product(name: "Logging", package: "swift-log"),
            .product(name: "Crypto", package: "swift-crypto"), .product(name: "_CryptoExtras", package: "swift-crypto"),
        ]),
        .target(name: "BLEDomain", dependencies: [
            "BLETransport", "BLEHCI",
            .product(name: "Crypto", package: "swift-crypto"), .product(name: "_CryptoExtras", package: "swift-crypto"),
        ]),
        .target(name: "BLESpool", dependencies: ["CSQLite", "BLETransport"]),
        .target(name: "BLEPublishing", dependencies: ["CMosquitto", "COpenSSL", "BLETransport", "BLESpool"]),
        // The gateway's configuration: the YAML file, the remote JSON documents and overlays, canonical form,
        // digests and signatures. Values only: BLEGateway applies them.
        .target(name: "BLEConfiguration", dependencies: [
            "BLETransport", "BLEHCI", "BLEDomain",
            .product(name: "Yams", package: "Yams"), .product(name: "Crypto", package: "swift-crypto"),
        ]),
        // Home Assistant's ESPHome native API (docs/ESPHOME.md): one more consumer of the controller session, beside
        // MQTT publishing. Its messages are generated once from ESPHome's api.proto and committed (Generated/).
        .target(name: "BLEESPHome", dependencies: [
            "BLETransport", "BLEDomain",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "SwiftProtobuf", package: "swift-protobuf"),
        ]),
        .target(name: "BLEGateway", dependencies: [
            "BLETransport", "BLEHCI", "BLEHost", "BLEDomain", "BLESpool", "BLEPublishing", "BLEConfiguration",
            "BLEESPHome",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),
        // The fleet service: reads the broker only (docs/TOPICS.md), serves the dashboard and /metrics.
        .target(name: "BLEFleet", dependencies: [
            "BLETransport", "BLESpool", "BLEPublishing",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "Hummingbird", package: "hummingbird"), .product(name: "Yams", package: "Yams"),
        ]),
        .executableTarget(name: "blegateway", dependencies: [
            "BLEGateway", "BLEConfiguration", "BLEFleet", "BLESimulator", "BLETransport", "BLEHCI", "BLEHost", "BLEDomain", "BLESpool",
            "BLEPublishing", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),

        // The virtual radio: wire formats only, never the gateway's policies.
        .target(name: "BLESimulator", dependencies: [
            "BLETransport", "BLEHCI", .product(name: "Yams", package: "Yams"),
            .product(name: "Crypto", package: "swift-crypto"), .product(name: "_CryptoExtras", package: "swift-crypto"),
        ]),

        // Benchmarks are an executable, run by `make bench`, never by `make test`.
        .executableTarget(name: "blegateway-bench", dependencies: [
            "BLETransport", "BLEHCI", "BLEHost", "BLEDomain", "BLESpool", "BLEPublishing", "BLESimulator", "BLEGateway",
            "BLEConfiguration", "BLEFleet", "BLEESPHome", "BLETestSupport", .product(name: "Logging", package: "swift-log"),
        ], path: "Benchmarks", exclude: ["c", "peer_bluetooth_data_tools.py", "esphome_bench_client.py"]),

        .testTarget(name: "BLETransportTests", dependencies: ["BLETransport", "BLETestSupport"]),
        .testTarget(name: "BLEHCITests", dependencies: ["BLEHCI", "BLETransport", "BLETestSupport"]),
        .testTarget(name: "BLEHostTests", dependencies: ["BLEHost", "BLEHCI", "BLETransport", "BLESimulator", "BLETestSupport"]),
        .testTarget(name: "BLEDomainTests", dependencies: [
            "BLEDomain", "BLEHCI", "BLETransport", "BLESimulator", "BLETestSupport", .product(name: "Crypto", package: "swift-crypto"),
        ]),
        .testTarget(name: "BLESpoolTests", dependencies: ["BLESpool", "BLETransport", "BLETestSupport"]),
        // Helpers more than one test target (and the benchmarks) need, in one place: the mosquitto harness, loopback
        // ports, the raw HCI host on a simulator socket, a throw-away PKI, `eventually`, tool runs.
        .target(name: "BLETestSupport", dependencies: ["BLETransport"], path: "Tests/BLETestSupport"),
        .testTarget(name: "BLEPublishingTests", dependencies: ["BLEPublishing", "BLESpool", "BLETransport", "BLETestSupport"]),
        .testTarget(name: "BLEGatewayTests", dependencies: [
            "BLEGateway", "BLEConfiguration", "BLESimulator", "BLEPublishing", "BLESpool", "BLEDomain", "BLEHost", "BLEHCI", "BLETransport",
            "BLEESPHome", "BLETestSupport",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),
        .testTarget(name: "BLEFleetTests", dependencies: [
            "BLEFleet", "BLEPublishing", "BLESimulator", "BLEDomain", "BLEHCI", "BLETransport", "BLETestSupport",
            .product(name: "Logging", package: "swift-log"),
        ]),
        .testTarget(name: "BLEESPHomeTests", dependencies: [
            "BLEESPHome", "BLETransport", "BLETestSupport", .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .testTarget(name: "BLESimulatorTests", dependencies: ["BLESimulator", "BLEHCI", "BLETransport", "BLETestSupport"]),
    ]
)
