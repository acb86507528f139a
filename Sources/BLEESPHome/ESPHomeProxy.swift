import BLEDomain
import BLETransport
import Foundation
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

/// The gateway as an ESPHome Bluetooth proxy (docs/ESPHOME.md): Home Assistant's `esphome` integration connects to
/// it like to an ESP32 running ESPHome, and its Bluetooth stack takes the advertisements our controller hears. One
/// more consumer of the gateway's controller session: it is handed every sighting (`advertise`) and owns no radio.
///
/// One `run()`: it listens until cancelled or shut down gracefully, then closes every client.
public final class ESPHomeProxy: Service, Sendable {
    let configuration: ESPHomeProxyConfiguration
    let clock: any BLEClock
    let logger: Logger
    let version: String
    private let onListening: @Sendable (Int) async -> Void

    struct Books: Sendable {
        var statistics = ESPHomeStatistics()
        /// The controller's public address, `AA:BB:…`, once the adapter reported it: DeviceInfo's `mac_address`.
        var mac = "00:00:00:00:00:00"
        /// The one client advertisements go to (ESPHome has one subscriber), and its outbox.
        var subscriber: (id: UInt64, outbox: ESPHomeOutbox)?
        var nextClient: UInt64 = 0
    }
    let books = Locked(Books())

    /// - Parameter onListening: called with the bound port once clients can connect.
    public init(
        configuration: ESPHomeProxyConfiguration, version: String, clock: any BLEClock, logger: Logger,
        onListening: @escaping @Sendable (Int) async -> Void = { _ in }
    ) {
        self.configuration = configuration
        self.version = version
        self.clock = clock
        self.logger = logger
        self.onListening = onListening
    }

    public var statistics: ESPHomeStatistics { books.withLock { $0.statistics } }

    /// The controller's public address, as the adapter reports it after bring-up.
    public func controllerAddress(_ address: String) {
        books.withLock { $0.mac = address.uppercased() }
    }

    /// One sighting, to the subscribed client if there is one: address, address type, RSSI and the AD bytes as the
    /// controller reported them.
    public func advertise(_ s: Sighting) {
        guard let outbox = books.withLock({ $0.subscriber?.outbox }) else { return }
        var a = ESPHome_BluetoothLERawAdvertisement()
        a.address = s.address.rawValue
        // ESPHome's address types: 0 public, 1 random; an identity address keeps its kind.
        a.addressType = UInt32(s.addressType.rawValue & 0x01)
        a.rssi = Int32(s.rssi ?? -127)
        a.data = Data(s.advertisement.data)
        if !outbox.advertise(a) { books.withLock { $0.statistics.advertisementsDropped += 1 } }
    }

    public func run() async throws {
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: configuration.host, port: configuration.port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        let port = server.channel.localAddress?.port ?? configuration.port
        logger.info(
            "esphome_api: listening on \(configuration.host):\(port) (\(configuration.psk == nil ? "plaintext" : "noise"))"
        )
        await onListening(port)
        // A graceful shutdown cancels the accept loop and every client's task: each closes its socket.
        try await cancelWhenGracefulShutdown {
            try await withThrowingDiscardingTaskGroup { group in
                try await server.executeThenClose { clients in
                    for try await client in clients {
                        group.addTask { await self.serve(client) }
                    }
                }
            }
        }
    }
}
