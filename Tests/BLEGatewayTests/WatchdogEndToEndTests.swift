import BLETestSupport
import BLETransport
import Foundation
import Testing

@testable import BLEConfiguration
@testable import BLEGateway

extension EndToEndSuites {
    /// The service manager's side of `Type=notify` with `WatchdogSec=`, seen on a notification socket the test owns:
    /// READY=1 once the gateway runs, WATCHDOG=1 while it makes progress; a broker frozen with SIGSTOP (the
    /// connection stays up, nothing is acknowledged, readings pile up) wedges the publisher and the feeding stops, so
    /// systemd would restart the gateway; once the broker answers again the feeding resumes.
    @Suite(
        .enabled(if: TestDependency.runs(Mosquitto.isAvailable), "needs /usr/sbin/mosquitto (make test installs it)"),
        .timeLimit(.minutes(2)), .serialized)
    struct WatchdogEndToEndTests {
        /// A datagram socket bound at a path, collecting what arrives on a thread of its own until `stop()`.
        final class NotifySocket: @unchecked Sendable {
            let path: String
            let fd: Int32
            let messages = Locked<[(at: ContinuousClock.Instant, text: String)]>([])
            private var thread: Thread?

            init(path: String) throws {
                self.path = path
                fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
                var address = sockaddr_un()
                address.sun_family = sa_family_t(AF_UNIX)
                withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
                let bound = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                    }
                }
                guard fd >= 0, bound == 0 else { throw POSIXError(.EADDRINUSE) }
                let t = Thread { [self] in
                    var buffer = [UInt8](repeating: 0, count: 4096)
                    while true {
                        let n = recv(fd, &buffer, buffer.count, 0)
                        guard n > 0 else { break }
                        let text = String(decoding: buffer[..<n], as: UTF8.self)
                        if text == "END" { break }
                        messages.withLock { $0.append((.now, text)) }
                    }
                }
                thread = t
                t.start()
            }

            func count(_ line: String) -> Int { messages.withLock { $0.filter { $0.text.contains(line) }.count } }

            /// Ends the reading thread with a datagram of its own (a blocked recv is not woken by close).
            func stop() {
                _ = ServiceManagerNotifier(environment: ["NOTIFY_SOCKET": path]).notify("END")
                close(fd)
            }
        }

        @Test func aFrozenBrokerStopsTheWatchdogFeedingAndItResumesWhenTheBrokerAnswers() async throws {
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("watchdog-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: dir) }
            let broker = try Mosquitto(directory: dir)
            try broker.start()
            defer {
                broker.resume()
                broker.terminate(limit: .seconds(5))
            }
            let port = broker.port
            let socket = try NotifySocket(path: dir.appendingPathComponent("notify").path)
            defer { socket.stop() }

            var c = GatewayConfiguration()
            c.gateway.id = "gw-w"
            c.mqtt.broker = "mqtt://127.0.0.1:\(port)"
            c.mqtt.prefix = "watchdog\(UInt32.random(in: 0...UInt32.max))"
            c.mqtt.keepAliveSeconds = 120  // the frozen broker is not noticed by the keepalive within the test
            c.spool.path = dir.appendingPathComponent("spool.sqlite").path
            c.publishing.rangingIntervalSeconds = 0.2
            c.remoteConfig.enabled = false
            let notifier = ServiceManagerNotifier(environment: [
                "NOTIFY_SOCKET": socket.path, "WATCHDOG_USEC": "2000000",
            ])
            #expect(notifier.watchdogInterval == .seconds(2))
            let source = Source()
            let runtime = try GatewayRuntime(
                configuration: c, source: source, clockSynchronized: { true },
                notifier: notifier)
            source.lock.withLock { source.runtime = runtime }
            let task = Task { try await runtime.run() }
            defer { task.cancel() }

            try await EndToEndSuites.waitFor("READY=1 and the watchdog fed", limit: .seconds(20)) {
                socket.count("READY=1") == 1 && socket.count("WATCHDOG=1") >= 3
            }
            broker.pause()
            try await EndToEndSuites.waitFor("the publisher reported stalled", limit: .seconds(20)) {
                socket.count("STATUS=publisher stalled") >= 1
            }
            let fed = socket.count("WATCHDOG=1")
            try await Task.sleep(for: .seconds(4))  // two watchdog intervals: systemd would have restarted it
            #expect(socket.count("WATCHDOG=1") == fed, "the watchdog was fed while the publisher was stalled")

            broker.resume()
            try await EndToEndSuites.waitFor("the watchdog fed again", limit: .seconds(20)) {
                socket.count("WATCHDOG=1") > fed
            }
            task.cancel()
            _ = try? await task.value
            #expect(socket.count("STOPPING=1") == 1)
        }
    }
}
