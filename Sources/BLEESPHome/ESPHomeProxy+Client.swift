import BLETransport
import NIOCore

/// One client: its bytes through `ESPHomeConnection`, its messages answered (`ESPHomeProxy+Requests`), its writer
/// sending the outbox in order, and ESPHome's keepalive.
extension ESPHomeProxy {
    /// One client's shared parts: what its reader, writer and keepalive share (under one lock), and its outbox.
    final class Client: Sendable {
        let id: UInt64
        struct Shared: Sendable {
            /// The framing and the ciphers: the reader opens with one, the writer seals with the other.
            var connection: ESPHomeConnection
            /// The clock's reading when the client last sent a whole message.
            var lastHeard: Duration
        }
        let shared: Locked<Shared>
        let outbox: ESPHomeOutbox
        let heard = WakeSignal()

        init(id: UInt64, connection: ESPHomeConnection, backlog: Int, now: Duration) {
            self.id = id
            self.shared = Locked(Shared(connection: connection, lastHeard: now))
            self.outbox = ESPHomeOutbox(limit: backlog)
        }

        /// False when the reply was not queued: too many wait unread (`ESPHomeOutbox.replyLimit`).
        @discardableResult
        func send(_ type: ESPHomeMessageType, _ message: [UInt8]) -> Bool { outbox.send(.message(type, message)) }

        /// How the connection goes on after a message.
        enum Next {
            case read
            /// The writer sends what is queued (a goodbye, a handshake failure), then the socket closes.
            case close
            /// The socket closes now: the client does not read what is queued, so it would never be sent.
            case cut
        }
    }

    func serve(_ channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>) async {
        let peer = channel.channel.remoteAddress.map { "\($0)" } ?? "a client"
        let id = books.withLock { b -> UInt64 in
            b.nextClient += 1
            b.statistics.clients += 1
            b.statistics.connectionsAccepted += 1
            return b.nextClient
        }
        let mac = books.withLock { $0.mac }
        let client = Client(
            id: id,
            connection: ESPHomeConnection(psk: configuration.psk, name: configuration.name, mac: mac),
            backlog: configuration.clientBacklog, now: clock.now())
        logger.info("esphome_api: \(peer) connected")
        defer {
            books.withLock { b in
                b.statistics.clients -= 1
                if b.subscriber?.id == id { b.subscriber = nil }
            }
            logger.info("esphome_api: \(peer) gone")
        }
        try? await channel.executeThenClose { inbound, outbound in
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    if await self.read(inbound, client: client, peer: peer) == .cut {
                        // The writer may wait on a socket the client never drains: closing it ends that write.
                        channel.channel.close(promise: nil)
                    }
                    client.outbox.finish()
                }
                group.addTask { await self.keepAlive(client) }
                // The writer ends once the outbox is finished and sent (the reader's end, the keepalive's verdict)
                // or when the socket fails; then the client is done.
                await self.write(client, to: outbound)
                group.cancelAll()
            }
        }
    }

    /// Reads until the client's end, a fault, or a message that ends it: `.close` or `.cut` (Client.Next).
    private func read(
        _ inbound: NIOAsyncChannelInboundStream<ByteBuffer>, client: Client, peer: String
    ) async -> Client.Next {
        do {
            for try await buffer in inbound {
                let now = clock.now()
                let actions = client.shared.withLock { shared in
                    let actions = shared.connection.received(buffer.readableBytesView)
                    if actions.contains(where: { if case .message = $0 { true } else { false } }) {
                        shared.lastHeard = now
                    }
                    return actions
                }
                for action in actions {
                    switch action {
                    case .write(let bytes):
                        client.outbox.send(.framed(bytes))
                    case .message(let type, let message):
                        client.heard.signal()
                        let next = respond(to: type, message, client: client)
                        guard next == .read else { return next }
                    case .close(let failure):
                        books.withLock {
                            if failure == .wrongKey {
                                $0.statistics.wrongKey += 1
                            } else {
                                $0.statistics.protocolErrors += 1
                            }
                        }
                        logger.warning("esphome_api: \(peer) closed: \(failure)")
                        return .close
                    }
                }
            }
        } catch {
            logger.debug("esphome_api: \(peer): \(error)")
        }
        return .close
    }

    private func write(_ client: Client, to outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>) async {
        while let batch = await client.outbox.next() {
            var bytes: [UInt8] = []
            let sent = client.shared.withLock { shared -> Int in
                for item in batch.items {
                    switch item {
                    case .framed(let framed): bytes += framed
                    case .message(let type, let message): bytes += shared.connection.frame(type, message) ?? []
                    }
                }
                // ESPHome batches raw advertisements; a noise frame holds 65,535 bytes, so at most 256 (each is at
                // most 8 + 6 + 4 + 255 bytes on the wire) go into one message.
                var start = 0
                while start < batch.advertisements.count {
                    let end = min(start + 256, batch.advertisements.count)
                    var m = ESPHome_BluetoothLERawAdvertisementsResponse()
                    m.advertisements = Array(batch.advertisements[start..<end])
                    if let encoded = try? m.serializedBytes() as [UInt8] {
                        bytes += shared.connection.frame(.bluetoothLERawAdvertisementsResponse, encoded) ?? []
                    }
                    start = end
                }
                return batch.advertisements.count
            }
            if sent > 0 { books.withLock { $0.statistics.advertisementsSent += UInt64(sent) } }
            guard !bytes.isEmpty else { continue }
            do {
                try await outbound.write(ByteBuffer(bytes: bytes))
            } catch {
                return
            }
        }
    }

    /// ESPHome's keepalive: after `keepaliveSeconds` of silence a PingRequest, and at 2.5 times that the
    /// connection is given up (the reader's end closes it).
    private func keepAlive(_ client: Client) async {
        let interval = Duration.seconds(configuration.keepaliveSeconds)
        var pinged = false
        while !Task.isCancelled {
            let last = client.shared.withLock { $0.lastHeard }
            let silent = clock.now() - last
            if silent >= interval * 2.5 {
                logger.warning("esphome_api: client \(client.id) silent for \(silent), closing")
                client.outbox.finish()
                return
            }
            if silent >= interval, !pinged {
                client.send(.pingRequest, [])
                pinged = true
            } else if silent < interval {
                pinged = false
            }
            let next = silent < interval ? last + interval : last + interval * 2.5
            await client.heard.wait(upTo: next - clock.now(), clock: clock)
        }
    }
}
