import Foundation

/// A throw-away PKI made with `openssl`: a CA, a server certificate for 127.0.0.1/localhost, a client certificate
/// with an encrypted key (its passphrase in a file), and an unrelated CA that must not be trusted; and the wrong
/// ones a deployment meets: a server certificate for another host name, one that has expired, and a client
/// certificate from the unrelated CA.
public struct TestCertificates {
    public let caFile: String
    public let serverCertificate: String
    public let serverKey: String
    public let clientCertificate: String
    public let clientKey: String
    public let clientKeyEncrypted: String
    public let clientKeyPassphraseFile: String
    public let otherCAFile: String
    public let wrongHostServerCertificate: String
    public let expiredServerCertificate: String
    public let untrustedClientCertificate: String
    public let untrustedClientKey: String

    public static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl") }

    public init(in directory: URL) throws {
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        let openssl = "/usr/bin/openssl"
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try ToolRun.succeeding(
            openssl,
            ["req", "-x509"] + ec + [
                "-keyout", path("ca.key"), "-out", path("ca.crt"), "-days", "2",
                "-subj", "/CN=BLEGateway Test CA",
            ])
        try ToolRun.succeeding(
            openssl,
            ["req", "-x509"] + ec + [
                "-keyout", path("other-ca.key"), "-out", path("other-ca.crt"),
                "-days", "2", "-subj", "/CN=Untrusted CA",
            ])
        try "subjectAltName=DNS:localhost,IP:127.0.0.1\n".write(
            toFile: path("san.cnf"), atomically: true,
            encoding: .utf8)
        for (name, subject) in [("server", "/CN=localhost"), ("client", "/CN=blegateway-test")] {
            try ToolRun.succeeding(
                openssl,
                ["req"] + ec + [
                    "-keyout", path("\(name).key"), "-out", path("\(name).csr"),
                    "-subj", subject,
                ])
            var sign = [
                "x509", "-req", "-in", path("\(name).csr"), "-CA", path("ca.crt"), "-CAkey", path("ca.key"),
                "-CAcreateserial", "-out", path("\(name).crt"), "-days", "2",
            ]
            if name == "server" { sign += ["-extfile", path("san.cnf")] }
            try ToolRun.succeeding(openssl, sign)
        }
        try "subjectAltName=DNS:wrong.example\n".write(toFile: path("wrong-san.cnf"), atomically: true, encoding: .utf8)
        // The same server key, certified for another name, and certified for a day that ended before it began.
        for (name, days, ext) in [("wrong-host", "2", "wrong-san.cnf"), ("expired", "-1", "san.cnf")] {
            try ToolRun.succeeding(
                openssl,
                [
                    "x509", "-req", "-in", path("server.csr"), "-CA", path("ca.crt"), "-CAkey", path("ca.key"),
                    "-CAcreateserial", "-out", path("\(name).crt"), "-days", days, "-extfile", path(ext),
                ])
        }
        try ToolRun.succeeding(
            openssl,
            ["req"] + ec + [
                "-keyout", path("untrusted-client.key"), "-out", path("untrusted-client.csr"),
                "-subj", "/CN=intruder",
            ])
        try ToolRun.succeeding(
            openssl,
            [
                "x509", "-req", "-in", path("untrusted-client.csr"), "-CA", path("other-ca.crt"),
                "-CAkey", path("other-ca.key"), "-CAcreateserial", "-out", path("untrusted-client.crt"),
                "-days", "2",
            ])
        try "correct horse\n".write(toFile: path("client.pass"), atomically: true, encoding: .utf8)
        try ToolRun.succeeding(
            openssl,
            [
                "pkey", "-in", path("client.key"), "-aes256", "-passout", "pass:correct horse",
                "-out", path("client.enc.key"),
            ])
        caFile = path("ca.crt")
        serverCertificate = path("server.crt")
        serverKey = path("server.key")
        clientCertificate = path("client.crt")
        clientKey = path("client.key")
        clientKeyEncrypted = path("client.enc.key")
        clientKeyPassphraseFile = path("client.pass")
        otherCAFile = path("other-ca.crt")
        wrongHostServerCertificate = path("wrong-host.crt")
        expiredServerCertificate = path("expired.crt")
        untrustedClientCertificate = path("untrusted-client.crt")
        untrustedClientKey = path("untrusted-client.key")
    }
}
