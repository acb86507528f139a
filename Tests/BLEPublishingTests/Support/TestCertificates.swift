import Foundation

/// A throw-away PKI made with `openssl`: a CA, a server certificate for 127.0.0.1/localhost, a client certificate
/// with an encrypted key (its passphrase in a file), and an unrelated CA that must not be trusted.
struct TestCertificates {
    let caFile: String
    let serverCertificate: String
    let serverKey: String
    let clientCertificate: String
    let clientKeyEncrypted: String
    let clientKeyPassphraseFile: String
    let otherCAFile: String

    static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl") }

    init(in directory: URL) throws {
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        let openssl = "/usr/bin/openssl"
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try run(openssl, ["req", "-x509"] + ec + ["-keyout", path("ca.key"), "-out", path("ca.crt"), "-days", "2",
                                                   "-subj", "/CN=BLEGateway Test CA"])
        try run(openssl, ["req", "-x509"] + ec + ["-keyout", path("other-ca.key"), "-out", path("other-ca.crt"),
                                                   "-days", "2", "-subj", "/CN=Untrusted CA"])
        try "subjectAltName=DNS:localhost,IP:127.0.0.1\n".write(toFile: path("san.cnf"), atomically: true,
                                                                  encoding: .utf8)
        for (name, subject) in [("server", "/CN=localhost"), ("client", "/CN=blegateway-test")] {
            try run(openssl, ["req"] + ec + ["-keyout", path("\(name).key"), "-out", path("\(name).csr"),
                                              "-subj", subject])
            var sign = ["x509", "-req", "-in", path("\(name).csr"), "-CA", path("ca.crt"), "-CAkey", path("ca.key"),
                        "-CAcreateserial", "-out", path("\(name).crt"), "-days", "2"]
            if name == "server" { sign += ["-extfile", path("san.cnf")] }
            try run(openssl, sign)
        }
        try "correct horse\n".write(toFile: path("client.pass"), atomically: true, encoding: .utf8)
        try run(openssl, ["pkey", "-in", path("client.key"), "-aes256", "-passout", "pass:correct horse",
                          "-out", path("client.enc.key")])
        caFile = path("ca.crt")
        serverCertificate = path("server.crt")
        serverKey = path("server.key")
        clientCertificate = path("client.crt")
        clientKeyEncrypted = path("client.enc.key")
        clientKeyPassphraseFile = path("client.pass")
        otherCAFile = path("other-ca.crt")
    }
}
