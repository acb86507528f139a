import COpenSSL
import Foundation

/// Why a connection to the broker failed at the TLS layer, in words an operator can act on. libmosquitto reports
/// every failed verification as "certificate verify failed", a refused client certificate as a lost connection, and
/// a port of the other kind as a lost connection or a handshake that never ends. After such a failure the client runs
/// one handshake of its own with the same files (bounded by `timeout`) and names the cause: the X.509 verification
/// result with its number (expired, another host name, an unknown issuer), the broker's TLS alert, or a port that
/// does or does not speak TLS.
enum TLSDiagnosis {
    /// `tls` nil: the client spoke plain MQTT; the diagnosis tells whether the port speaks TLS instead.
    static func explain(
        host: String, port: Int, tls: MQTTConfiguration.TLS?, keyPassphrase: [UInt8]?,
        timeout: Duration = .seconds(5)
    ) -> String? {
        guard let fd = connectTCP(host: host, port: port, timeout: timeout) else { return nil }
        defer { close(fd) }
        guard let ctx = SSL_CTX_new(TLS_client_method()) else { return nil }
        defer { SSL_CTX_free(ctx) }
        // Verification is judged after the handshake (SSL_get_verify_result), so that it is named, not aborted.
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nil)
        if let tls {
            if tls.caFile != nil || tls.caPath != nil {
                guard SSL_CTX_load_verify_locations(ctx, tls.caFile, tls.caPath) == 1 else { return nil }
            } else {
                SSL_CTX_set_default_verify_paths(ctx)
            }
            if let certificate = tls.certificateFile, let key = tls.keyFile {
                var passphrase = (keyPassphrase ?? []).map { CChar(bitPattern: $0) } + [0]
                let loaded = passphrase.withUnsafeMutableBufferPointer { p -> Bool in
                    SSL_CTX_set_default_passwd_cb_userdata(ctx, p.baseAddress)
                    defer { SSL_CTX_set_default_passwd_cb_userdata(ctx, nil) }
                    return SSL_CTX_use_certificate_chain_file(ctx, certificate) == 1
                        && SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) == 1
                }
                guard loaded else { return nil }
            }
        }
        guard let ssl = SSL_new(ctx) else { return nil }
        defer { SSL_free(ssl) }
        SSL_set_fd(ssl, fd)
        let isAddress = host.contains(":") || host.split(separator: ".").allSatisfy { UInt8($0) != nil }
        if isAddress {
            X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host)
        } else {
            _ = blegw_ssl_set_sni(ssl, host)
            if tls?.verifyHostname ?? true { SSL_set1_host(ssl, host) }
        }
        ERR_clear_error()
        if SSL_connect(ssl) != 1 {
            let reason = lastReason()
            if tls == nil { return nil }  // neither plain MQTT nor TLS: nothing to say about TLS
            if let reason, reason.contains("alert") {
                return refusal(reason)
            }
            let why = reason.map { " (\($0))" } ?? ""
            return "port \(port) does not answer a TLS handshake\(why): a plaintext listener? use mqtt://"
        }
        if tls == nil { return "port \(port) speaks TLS: use mqtts://" }
        let verification = SSL_get_verify_result(ssl)
        if verification != X509_V_OK {
            let text = String(cString: X509_verify_cert_error_string(verification))
            return "the broker's certificate does not verify: \(text) (X.509 error \(verification))"
        }
        // TLS 1.3: the broker judges the client certificate (or its absence) after the client's handshake is done
        // and answers with an alert on the first read; a broker content with it waits for CONNECT instead.
        var brief = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &brief, socklen_t(MemoryLayout<timeval>.size))
        var byte: UInt8 = 0
        ERR_clear_error()
        if SSL_read(ssl, &byte, 1) <= 0, let reason = lastReason(), reason.contains("alert") {
            return refusal(reason)
        }
        return nil
    }

    private static func refusal(_ reason: String) -> String {
        let client = [
            "unknown ca", "bad certificate", "certificate required", "certificate unknown",
            "unsupported certificate", "certificate expired", "certificate revoked",
        ]
        if client.contains(where: reason.contains) {
            return "the broker refused the client certificate (TLS alert: \(reason))"
        }
        return "the broker ended the TLS handshake (TLS alert: \(reason))"
    }

    /// OpenSSL's reason for the last failure, e.g. "tlsv1 alert unknown ca", "wrong version number".
    private static func lastReason() -> String? {
        var last: UInt = 0
        while case let e = ERR_get_error(), e != 0 { last = e }
        guard last != 0, let text = ERR_reason_error_string(last) else { return nil }
        return String(cString: text)
    }

    /// A TCP connection with send and receive bounded by `timeout` (SO_SNDTIMEO bounds connect too).
    private static func connectTCP(host: String, port: Int, timeout: Duration) -> Int32? {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else { return nil }
        defer { freeaddrinfo(list) }
        var tv = timeval(
            tv_sec: Int(timeout.components.seconds), tv_usec: Int(timeout.components.attoseconds / 1_000_000_000_000))
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let a = candidate {
            candidate = a.pointee.ai_next
            let fd = socket(a.pointee.ai_family, a.pointee.ai_socktype, a.pointee.ai_protocol)
            guard fd >= 0 else { continue }
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            if connect(fd, a.pointee.ai_addr, a.pointee.ai_addrlen) == 0 { return fd }
            close(fd)
        }
        return nil
    }
}
