import BLETestSupport
import Foundation
import Testing

/// The tools join a broker that requires mutual TLS (docs/DEPLOY.md) with `--ca-file`, `--cert-file` and
/// `--key-file`, and say why when they cannot: the real command against a real mosquitto with a throw-away PKI.
@Suite(
    .enabled(
        if: TestDependency.runs(Mosquitto.isAvailable && TestCertificates.isAvailable), "needs mosquitto and openssl"),
    .serialized)
struct ToolTLSTests {
    @Test func configGetJoinsAMutualTLSBrokerWithTheTLSFilesAndNamesWhatIsWrongWithout() throws {
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("tool-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let pki = try TestCertificates(in: dir)
        let broker = try Mosquitto(directory: dir)
        broker.tls = Mosquitto.TLSListener(
            caFile: pki.caFile, certificateFile: pki.serverCertificate, keyFile: pki.serverKey,
            requireClientCertificate: true)
        try broker.start()
        defer { broker.kill() }
        let port = broker.port
        let published = try ToolRun.run(
            "/usr/bin/mosquitto_pub",
            [
                "-h", "127.0.0.1", "-p", "\(port)", "--cafile", pki.caFile, "--cert", pki.clientCertificate,
                "--key", pki.clientKey, "-r", "-q", "1", "-t", "site/gw-1/config", "-m", #"{"version": 3}"#,
            ])
        #expect(published.status == 0, "\(published.output)")

        let get = ["config", "get", "--gateway", "gw-1", "--prefix", "site", "--broker", "mqtts://127.0.0.1:\(port)"]
        let files = ["--ca-file", pki.caFile, "--cert-file", pki.clientCertificate, "--key-file", pki.clientKey]
        let joined = try ToolRun.run(BuiltProducts.blegateway, get + files)
        #expect(
            joined.status == 0 && (joined.output.contains(#""version": 3"#) || joined.output.contains(#""version":3"#)),
            "\(joined.output)")
        let noClientCertificate = try ToolRun.run(
            BuiltProducts.blegateway,
            get + ["--ca-file", pki.caFile])
        #expect(noClientCertificate.status != 0, "\(noClientCertificate.output)")
        #expect(
            noClientCertificate.output.contains("the broker refused the client certificate"),
            "\(noClientCertificate.output)")
        let plain = try ToolRun.run(
            BuiltProducts.blegateway,
            [
                "config", "get", "--gateway", "gw-1", "--prefix", "site", "--broker", "mqtt://127.0.0.1:\(port)",
                "--ca-file", pki.caFile,
            ])
        #expect(plain.status != 0 && plain.output.contains("needs an mqtts:// broker"), "\(plain.output)")
        let half = try ToolRun.run(
            BuiltProducts.blegateway,
            get + ["--cert-file", pki.clientCertificate])
        #expect(half.status != 0 && half.output.contains("--cert-file and --key-file go together"), "\(half.output)")
    }
}
