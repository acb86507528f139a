import BLESpool
import Foundation
import Testing

/// `blegateway spool dead-letters`: an operator sees, exports and requeues what the broker could never take; the
/// real command on a real spool file.
@Suite(.serialized)
struct SpoolDeadLettersCommandTests {
    static func run(_ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: BuiltProducts.blegateway)
        p.arguments = ["spool", "dead-letters"] + arguments
        let out = Pipe()
        let err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let o = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let e = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        return (p.terminationStatus, o, e)
    }

    @Test func anOperatorListsExportsAndRequeuesDeadLettersOfAStoppedGateway() throws {
        let dir = NSTemporaryDirectory() + "deadcli-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/spool.sqlite"
        var seq: UInt64 = 0
        do {
            let spool = try Spool(configuration: SpoolConfiguration(path: path))
            _ = try spool.appendDurably(
                Reading(
                    .state, topic: "p/gw/a", body: Array(#"{"n":1}"#.utf8), qos: 1, ts: 1,
                    clockSynchronized: true, run: "r"))
            seq = try spool.appendDurably(
                Reading(
                    .state, topic: "p/gw/config/state", body: Array(#"{"big":"x"}"#.utf8),
                    qos: 1, retain: true, ts: 2, clockSynchronized: true, run: "r"))
            spool.deadLetter(seq, reason: DeadLetterReason(code: 0x95, name: "Packet too large"), at: 3)
            try spool.commit()

            // While a gateway holds the spool, the command says so and changes nothing.
            let held = try Self.run(["--spool", dir])
            #expect(held.status != 0)
            #expect(held.err.contains("stop it first"), "\(held.err)")
        }

        let list = try Self.run(["--spool", dir])
        #expect(list.status == 0, "\(list.err)")
        #expect(list.out.contains("1 dead letter(s)"), "\(list.out)")
        #expect(
            list.out.contains("seq \(seq)  p/gw/config/state") && list.out.contains("149 Packet too large"),
            "\(list.out)")

        let json = try Self.run(["--spool", path, "--json"])
        let line = try #require(json.out.split(separator: "\n").first)
        let o = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(o["seq"] as? Int == Int(seq))
        #expect(o["reason_code"] as? Int == 0x95)
        #expect(o["retain"] as? Bool == true)
        #expect(o["payload"] as? String == #"{"big":"x"}"#)

        let exported = dir + "/letters.jsonl"
        #expect(try Self.run(["--spool", path, "--export", exported]).status == 0)
        #expect(try String(contentsOfFile: exported, encoding: .utf8) == json.out)

        let requeue = try Self.run(["--spool", path, "--requeue-all"])
        #expect(requeue.status == 0)
        #expect(requeue.err.contains("requeued 1 reading"), "\(requeue.err)")
        let after = try Spool(configuration: SpoolConfiguration(path: path))
        #expect(after.statistics.deadLetters == 0)
        #expect(try after.pending(limit: 10).map(\.seq).last == seq)

        #expect(try Self.run([]).status != 0, "a spool or a configuration is required")
    }
}
