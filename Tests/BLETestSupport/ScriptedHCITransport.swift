import BLETransport
import Foundation

/// A test double for `HCITransport`: checks each command the host sends against a script of literal
/// H4 bytes and answers with the script's literal event bytes (BlueZ `unit/test-gatt.c` style).
///
/// Incoming bytes go through an `H4Deframer`, so a script may be written as one byte stream. A send that does
/// not match the script is recorded in `mismatches` and ends the transport with an error naming both byte
/// strings, as a failed read would: the host's pending command fails at once instead of waiting for an answer
/// that never comes. The simulated controller replaces this for end-to-end tests; this one is for exact byte
/// exchanges.
public final class ScriptedHCITransport: HCITransport, @unchecked Sendable {
    /// One command the host must send next, and the packets the controller answers with.
    public struct Exchange: Sendable {
        public var command: [UInt8]
        public var replies: [[UInt8]]
        public init(_ command: [UInt8], _ replies: [[UInt8]]) {
            self.command = command
            self.replies = replies
        }
    }

    public let name: String
    /// A live controller's queue: advertising reports beyond `queueCapacity` are dropped and counted.
    public let incoming: StageQueue<H4Packet>
    private let lock = NSLock()
    private var script: [Exchange]
    private var deframer = H4Deframer()
    private var _sent: [[UInt8]] = []
    private var _mismatches: [String] = []
    private var closed = false
    private let sendSupported: Bool
    private let feedOneByteAtATime: Bool

    /// - Parameters:
    ///   - sendSupported: false models a shared-mode transport, whose `send` throws `.unsupported`.
    ///   - feedOneByteAtATime: hand the deframer replies one byte at a time, as a slow UART would.
    public init(
        name: String = "scripted", script: [Exchange], sendSupported: Bool = true,
        feedOneByteAtATime: Bool = false, queueCapacity: Int = StageQueue<H4Packet>.defaultCapacity
    ) {
        self.name = name
        self.script = script
        self.sendSupported = sendSupported
        self.feedOneByteAtATime = feedOneByteAtATime
        incoming = StageQueue(capacity: queueCapacity, whenFull: .drop)
    }

    /// Every packet the host sent, as H4 bytes.
    public var sent: [[UInt8]] { lock.withLock { _sent } }
    /// Descriptions of sends that did not match the script.
    public var mismatches: [String] { lock.withLock { _mismatches } }
    /// Exchanges not yet performed.
    public var remaining: Int { lock.withLock { script.count } }

    public func send(_ packet: H4Packet) throws {
        guard sendSupported else { throw TransportError(.unsupported, "\(name): sending is not supported") }
        let outcome: Result<[[UInt8]], TransportError> = try lock.withLock {
            if closed { throw TransportError(.closed, "\(name): closed") }
            let bytes = packet.h4Bytes
            _sent.append(bytes)
            guard let next = script.first else {
                return .failure(mismatch("unexpected \(hexString(bytes)) after the end of the script"))
            }
            guard next.command == bytes else {
                return .failure(mismatch("expected \(hexString(next.command)), got \(hexString(bytes))"))
            }
            script.removeFirst()
            return .success(next.replies)
        }
        switch outcome {
        case .success(let replies): for r in replies { inject(r) }
        case .failure(let error): incoming.finish(throwing: error)
        }
    }

    /// Records a mismatch (under the lock) and the error that ends the transport for it.
    private func mismatch(_ what: String) -> TransportError {
        _mismatches.append(what)
        return TransportError(.io, "\(name): script mismatch: \(what)")
    }

    /// Delivers controller bytes that no command asked for (advertising reports, hardware errors).
    public func inject(_ bytes: [UInt8]) {
        lock.withLock {
            if feedOneByteAtATime {
                for b in bytes {
                    deframer.append(CollectionOfOne(b))
                    while let p = deframer.next() { incoming.offer(p, essential: !p.isAdvertisingReport) }
                }
            } else {
                deframer.append(bytes)
                while let p = deframer.next() { incoming.offer(p, essential: !p.isAdvertisingReport) }
            }
        }
    }

    /// Ends input, as an unplugged controller does; with an error, as a failed read does.
    public func end(throwing error: (any Error)? = nil) { incoming.finish(throwing: error) }

    public func close() {
        lock.withLock { closed = true }
        incoming.finish()
    }
}

private func hexString(_ bytes: [UInt8]) -> String { bytes.map { upperHex($0, digits: 2) }.joined(separator: " ") }

extension ScriptedHCITransport: TransportStatisticsProviding {
    /// What a live controller's transport counts: here, the advertising reports its queue dropped.
    public var statistics: TransportStatistics {
        var s = TransportStatistics()
        s.droppedReports = incoming.dropped
        return s
    }
}
