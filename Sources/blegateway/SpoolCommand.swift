import ArgumentParser
import BLEConfiguration
import BLEDomain
import BLEGateway
import BLESpool
import BLETransport
import Foundation

/// `blegateway spool dead-letters`: the readings the broker can never take as they are, kept in the spool
/// (docs/SPOOL.md, "Dead letters"). The gateway holds its spool exclusively, so this runs while it is stopped.
struct SpoolCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "spool",
        abstract: "Look into a stopped gateway's spool.",
        subcommands: [DeadLetters.self])

    struct DeadLetters: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "dead-letters",
            abstract: "List, export or requeue the readings the broker could never take (too large, an invalid topic).",
            discussion: """
                The gateway holds its spool exclusively: stop it first. Requeued readings keep their seq and are \
                published, oldest first, when the gateway starts again; raise the broker's limit (or fix the topic) \
                before, or they come back here.
                """)

        @Option(help: "The gateway's configuration file (its spool.path).")
        var config: String?

        @Option(help: "The spool file, or the directory holding spool.sqlite (instead of --config).")
        var spool: String?

        @Flag(help: "One JSON object per line: seq, topic, qos, retain, ts, reason_code, reason, at, payload.")
        var json = false

        @Option(help: "Write them as JSON lines to FILE (- for standard output).")
        var export: String?

        @Option(parsing: .upToNextOption, help: "Put these seqs back in the queue.")
        var requeue: [UInt64] = []

        @Flag(help: "Put every dead letter back in the queue.")
        var requeueAll = false

        func validate() throws {
            guard (config != nil) != (spool != nil) else { throw ValidationError("give --config FILE or --spool PATH") }
            if requeueAll && !requeue.isEmpty { throw ValidationError("--requeue SEQ… or --requeue-all, not both") }
        }

        func run() async throws {
            var path = spool ?? ""
            if let config {
                do { path = try ConfigurationLoader.load(path: config).configuration.spool.path } catch {
                    throw ValidationError("\(error)")
                }
            }
            let file = try ConfigurationPreflight.spoolFile(path)
            guard FileManager.default.fileExists(atPath: file) else { throw ValidationError("no spool at \(file)") }
            let store: Spool
            do { store = try Spool(configuration: SpoolConfiguration(path: file)) } catch {
                throw ValidationError(
                    "cannot open the spool \(file) (\(error)); a running gateway holds it: stop it first")
            }
            if !requeue.isEmpty || requeueAll {
                let moved = try store.requeueDeadLetters(requeueAll ? nil : requeue)
                FileHandle.standardError.write(
                    Data("requeued \(moved) reading(s); the gateway sends them at its next start\n".utf8))
                return
            }
            let letters = try store.deadLetters()
            if let export {
                var out: [UInt8] = []
                for l in letters { out += Self.line(l) }
                if export == "-" {
                    FileHandle.standardOutput.write(Data(out))
                } else {
                    guard FileManager.default.createFile(atPath: export, contents: Data(out)) else {
                        throw ValidationError("cannot write \(export)")
                    }
                }
                FileHandle.standardError.write(Data("exported \(letters.count) dead letter(s)\n".utf8))
                return
            }
            if json {
                var out: [UInt8] = []
                for l in letters { out += Self.line(l) }
                FileHandle.standardOutput.write(Data(out))
                return
            }
            let s = store.statistics
            print(
                "\(file): \(s.deadLetters) dead letter(s), \(s.deadLetterBytes) bytes; \(s.deadLettersEvicted) evicted by the bound"
            )
            for l in letters {
                let r = l.spooled.reading
                print(
                    "seq \(l.spooled.seq)  \(r.topic)  \(r.body.count) bytes  qos \(r.qos)\(r.retain ? " retained" : "")  "
                        + "reason \(l.reason)")
            }
        }

        /// A dead letter as one JSON line; the payload as text when it is UTF-8 (the gateway's are JSON), else base64.
        static func line(_ l: DeadLetter) -> [UInt8] {
            let r = l.spooled.reading
            var o: [UInt8] = Array("{\"seq\":".utf8)
            JSONWriter.appendDecimal(Int64(bitPattern: l.spooled.seq), to: &o)
            o += Array(",\"topic\":".utf8)
            JSONWriter.appendString(r.topic, to: &o)
            o += Array(
                ",\"qos\":\(r.qos),\"retain\":\(r.retain),\"ts\":\(r.ts),\"reason_code\":\(l.reason.code),\"reason\":"
                    .utf8)
            JSONWriter.appendString(l.reason.name, to: &o)
            o += Array(",\"at\":\(l.at),".utf8)
            if let text = String(validating: r.body, as: UTF8.self) {
                o += Array("\"payload\":".utf8)
                JSONWriter.appendString(text, to: &o)
            } else {
                o += Array("\"payload_base64\":".utf8)
                JSONWriter.appendString(Data(r.body).base64EncodedString(), to: &o)
            }
            o += Array("}\n".utf8)
            return o
        }
    }
}
