import ArgumentParser
import BLEConfiguration
import BLEGateway
import BLEPublishing
import BLETransport
import Foundation

/// Broker options shared by `config push` and `config get`.
struct RemoteConfigBrokerOptions: ParsableArguments {
    @OptionGroup var connection: ToolBrokerOptions

    @Option(help: "The topic prefix the gateways use.")
    var prefix: String = "blegateway"

    var broker: String { connection.url() }

    func client(_ role: String) throws -> MQTTClient {
        MQTTClient(configuration: try connection.configuration(role: "config-\(role)"))
    }
}

/// Retained messages on `filters`, collected until `quiet` passes without a new one after the connection (or
/// `limit` in all). Retained messages come right after SUBACK, so a short quiet period means "that was all".
func collectRetained(
    _ client: MQTTClient, _ filters: [String], quiet: Duration = .milliseconds(700),
    limit: Duration = .seconds(5)
) async throws -> [String: [UInt8]] {
    let streams = try filters.map { try client.subscribe($0, qos: .atLeastOnce) }
    // The retained payloads by topic and when the last one came, under one lock.
    let box = Locked((retained: [String: [UInt8]](), last: ContinuousClock.Instant?.none))
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await client.run() }
        for stream in streams {
            group.addTask {
                for await m in stream where m.retain {
                    box.withLock {
                        $0.retained[m.topic] = m.payload
                        $0.last = .now
                    }
                }
            }
        }
        let start = ContinuousClock.now
        let connected = try await firstConnection(client, within: limit)
        if connected {
            // Retained messages follow SUBACK at once: wait until `quiet` has passed since the last one (or the
            // limit), sleeping to each deadline rather than polling: a new message only moves the deadline on.
            box.withLock { $0.last = .now }
            while true {
                let lastSeen = box.withLock { $0.last } ?? start
                let deadline = min(lastSeen + quiet, start + limit)
                if ContinuousClock.now >= deadline { break }
                try await Task.sleep(until: deadline, clock: .continuous)
            }
        }
        group.cancelAll()
        guard connected else { throw ValidationError("cannot reach the broker within \(limit)") }
        return box.withLock { $0.retained }
    }
}

/// Waits for the client's first CONNACK: true once connected, false when `limit` passed first (the client reports
/// each failed attempt, so the check comes at least once per retry); a refusal (bad credentials, not authorised)
/// is thrown with its reason code, and when `limit` passes after failed attempts, the last one is thrown with its
/// cause (a TLS failure names it: an expired certificate, a refused client certificate, a port of the other kind).
func firstConnection(_ client: MQTTClient, within limit: Duration) async throws -> Bool {
    let start = ContinuousClock.now
    var lastFailure: MQTTError?
    for await e in client.events {
        if case .connected = e { return true }
        if case .connectionRefused(let error) = e { throw error }
        if case .connectionFailed(let error) = e { lastFailure = error }
        if ContinuousClock.now - start > limit {
            if let lastFailure { throw ValidationError("cannot reach the broker within \(limit): \(lastFailure)") }
            return false
        }
    }
    return false
}

extension ConfigCommand {
    struct Push: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Publish a remote configuration document (retained) for one gateway or the whole fleet.",
            discussion: """
                The document is validated here first, as the gateway will, and checked against what the gateways
                report on config/state (whether they apply only signed documents, and each layer's version floor):
                it is not sent if a gateway would refuse it. --public-key checks the signature here as well.
                With --delete the layer is deleted: an empty retained message, or with --sign a signed tombstone
                (gateways with a public key accept only that) whose version is --version, or one above the highest
                floor the gateways report. See docs/CONFIG.md, "Remote configuration".
                """)

        @Option(help: "The gateway id: publish to <prefix>/<id>/config.")
        var gateway: String?

        @Flag(help: "Publish to <prefix>/fleet/config, for every gateway.")
        var fleet = false

        @Flag(help: "Delete the layer instead of publishing a document (with --sign: a signed tombstone).")
        var delete = false

        @Option(help: "Sign with this Ed25519 private key file (from `config keygen`); the document needs a version.")
        var sign: String?

        @Option(help: "With --delete --sign: the tombstone's version (default: one above the floors reported).")
        var version: Int?

        @Option(help: "Check the signature with this public key file (the gateways' remote_config.public_key_file).")
        var publicKey: String?

        @OptionGroup var options: RemoteConfigBrokerOptions

        @Option(help: "With --gateway: wait this long for the gateway's verdict on config/state (0: do not wait).")
        var wait: Double = 5

        @Argument(help: "The JSON document.")
        var file: String?

        func validate() throws {
            guard (gateway != nil) != fleet else {
                throw ValidationError("give exactly one of --gateway ID or --fleet")
            }
            guard (file != nil) != delete else { throw ValidationError("give a FILE, or --delete") }
            guard version == nil || (delete && sign != nil) else {
                throw ValidationError("--version is for a signed tombstone (--delete --sign); a document has its own")
            }
        }

        func fail(_ lines: [String]) -> ExitCode {
            for l in lines { FileHandle.standardError.write(Data("\(l)\n".utf8)) }
            return ExitCode(2)
        }

        func run() async throws {
            let topic = fleet ? "\(options.prefix)/fleet/config" : "\(options.prefix)/\(gateway!)/config"
            let address: ConfigSigning.Address = fleet ? .fleet : .gateway(gateway!)
            let layer = address.layer
            // What the gateways report: retained config/state, one per gateway (the fleet layer concerns them all).
            let stateFilter = "\(options.prefix)/\(fleet ? "+" : gateway!)/config/state"
            let reported = try await collectRetained(try options.client("check"), [stateFilter])
            let states = reported.compactMap { topic, payload -> (String, ReportedConfigState)? in
                ReportedConfigState(payload).map { (topic, $0) }
            }.sorted { $0.0 < $1.0 }

            var payload: [UInt8] = []
            var document: [UInt8] = []
            var documentVersion: Int?
            if let file {
                guard let data = FileManager.default.contents(atPath: file) else {
                    throw ValidationError("cannot read \(file)")
                }
                document = [UInt8](data)
                let verdict = RemoteConfigDocument.read(document)
                for w in verdict.warnings { FileHandle.standardError.write(Data("\(file): warning: \(w)\n".utf8)) }
                guard verdict.errors.isEmpty else { throw fail(verdict.errors.map { "\(file): \($0)" }) }
                documentVersion = verdict.overlay?.version
                payload = document
            } else if sign != nil {
                let floor = states.compactMap { $0.1.floors[layer.rawValue]?.version }.max()
                guard let v = version ?? floor.map({ $0 + 1 }) else {
                    throw ValidationError(
                        "no gateway reports a floor for the \(layer) layer: give the tombstone "
                            + "a --version")
                }
                document = Array(#"{"version":\#(v),"delete":true}"#.utf8)
                documentVersion = v
            }
            if let sign {
                guard documentVersion != nil else {
                    throw ValidationError(
                        "\(file ?? "the tombstone"): a signed document needs a \"version\" "
                            + "(gateways refuse lower ones)")
                }
                guard let key = FileManager.default.contents(atPath: sign) else {
                    throw ValidationError("cannot read \(sign)")
                }
                payload = try ConfigSigning.sign(
                    document, privateKey: String(decoding: key, as: UTF8.self),
                    for: address)
            }
            if let publicKey {
                guard let key = FileManager.default.contents(atPath: publicKey) else {
                    throw ValidationError("cannot read \(publicKey)")
                }
                let verifier = try ConfigSigning.Verifier(publicKey: String(decoding: key, as: UTF8.self))
                if payload.isEmpty {
                    throw fail([
                        "refused: with a public key, a layer is deleted only by a signed tombstone "
                            + "(--delete --sign KEY)"
                    ])
                }
                let verdict = RemoteConfigDocument.read(payload, verifier: verifier, address: address)
                guard verdict.errors.isEmpty else { throw fail(verdict.errors.map { "refused: \($0)" }) }
            }
            // Refuse what a gateway would: the same rules as RemoteConfigController, on what it reports.
            var refusals: [String] = []
            for (stateTopic, state) in states {
                let who = String(stateTopic.dropLast("/config/state".count))
                guard state.signedOnly else { continue }
                if sign == nil {
                    refusals.append(
                        "\(who) applies only signed documents"
                            + (payload.isEmpty
                                ? " and deletes a layer only on a signed tombstone (--delete --sign KEY)"
                                : " (--sign KEY)"))
                    continue
                }
                guard let v = documentVersion, let floor = state.floors[layer.rawValue] else { continue }
                if v < floor.version {
                    refusals.append("\(who): version \(v) is lower than \(floor.version), the \(layer) layer's floor")
                } else if v == floor.version && ConfigSigning.digest(document) != floor.sha256 {
                    refusals.append(
                        "\(who): version \(v) was applied with other content; give this one a "
                            + "higher version")
                }
            }
            guard refusals.isEmpty else { throw fail(refusals.map { "refused: \($0)" }) }

            let client = try options.client("push")
            let stateStream = try gateway.map { try client.subscribe("\(options.prefix)/\($0)/config/state") }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await client.run() }
                guard try await firstConnection(client, within: .seconds(10)) else {
                    group.cancelAll()
                    throw fail(["cannot reach the broker at \(options.broker) within 10 s; nothing was published"])
                }
                try await client.publish(MQTTMessage(topic: topic, payload: payload, qos: .atLeastOnce, retain: true))
                print(
                    payload.isEmpty
                        ? "deleted the retained document on \(topic)"
                        : delete
                            ? "published a signed tombstone, version \(documentVersion!), to \(topic)"
                            : "published \(payload.count) bytes to \(topic)")
                if let stateStream, wait > 0 {
                    // The retained state comes first; the gateway's verdict on this push is the next live one.
                    let verdict = Task { () -> String? in
                        for await m in stateStream where !m.retain { return String(decoding: m.payload, as: UTF8.self) }
                        return nil as String?
                    }
                    let timer = Task {
                        try await Task.sleep(for: .seconds(wait))
                        verdict.cancel()
                    }
                    if let v = await verdict.value {
                        print("gateway \(gateway!): \(v)")
                    } else {
                        print(
                            "no verdict from gateway \(gateway!) within \(wait) s "
                                + "(offline? it applies the retained document when it connects)")
                    }
                    timer.cancel()
                }
                group.cancelAll()
            }
        }
    }

    struct Keygen: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make an Ed25519 key pair for signed remote configuration.",
            discussion: """
                Writes NAME.key (the private key, mode 0600: keep it with the operators, for `config push --sign`) and
                NAME.pub (the public key: give it to the gateways as remote_config.public_key_file).
                """)

        @Argument(help: "The files' name without extension.")
        var name: String = "blegateway-config"

        func run() async throws {
            for path in ["\(name).key", "\(name).pub"] where FileManager.default.fileExists(atPath: path) {
                throw ValidationError("\(path) exists; not overwriting it")
            }
            let (privateKey, publicKey) = ConfigSigning.generateKeyPair()
            guard
                FileManager.default.createFile(
                    atPath: "\(name).key", contents: Data((privateKey + "\n").utf8),
                    attributes: [.posixPermissions: 0o600]),
                FileManager.default.createFile(atPath: "\(name).pub", contents: Data((publicKey + "\n").utf8))
            else {
                throw ValidationError("cannot write \(name).key / \(name).pub")
            }
            print("wrote \(name).key (private, keep it secret) and \(name).pub (public: remote_config.public_key_file)")
        }
    }

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Show the desired (fleet and gateway documents), reported (config/state) and effective configuration.")

        @Option(help: "The gateway id; without it, the fleet document and every gateway's reported state.")
        var gateway: String?

        @Option(help: "The gateway's local configuration file, to compute the effective configuration and its hash.")
        var local: String?

        @OptionGroup var options: RemoteConfigBrokerOptions

        func run() async throws {
            let p = options.prefix
            let fleetTopic = "\(p)/fleet/config"
            let filters =
                gateway.map { [fleetTopic, "\(p)/\($0)/config", "\(p)/\($0)/config/state"] }
                ?? [fleetTopic, "\(p)/+/config/state"]
            let retained = try await collectRetained(try options.client("get"), filters)
            func text(_ topic: String) -> String {
                guard let b = retained[topic] else { return "(none)" }
                if let inner = ConfigSigning.signedDocument(b) {
                    return "(signed) "
                        + String(decoding: inner, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                }
                return String(decoding: b, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            }
            print("desired  fleet    \(fleetTopic): \(text(fleetTopic))")
            guard let gateway else {
                for (topic, payload) in retained.sorted(by: { $0.key < $1.key }) where topic.hasSuffix("/config/state")
                {
                    print("reported \(topic): \(String(decoding: payload, as: UTF8.self))")
                }
                return
            }
            let gatewayTopic = "\(p)/\(gateway)/config"
            print("desired  gateway  \(gatewayTopic): \(text(gatewayTopic))")
            print("reported          \(gatewayTopic)/state: \(text("\(gatewayTopic)/state"))")
            var effective = GatewayConfiguration()
            if let local { effective = try ConfigurationLoader.load(path: local).configuration }
            effective.gateway.id = gateway
            let rc = RemoteConfigController(local: effective, directory: nil)
            for (layer, topic) in [(RemoteConfigLayer.fleet, fleetTopic), (.gateway, gatewayTopic)] {
                guard let b = retained[topic], let o = rc.receive(layer, payload: b), o.status == .rejected else {
                    continue
                }
                print("note: the \(layer) document is rejected: " + o.errors.map(\.description).joined(separator: "; "))
            }
            let e = rc.effective
            print(
                "effective\(local == nil ? " (over the defaults; --local FILE for the gateway's file)" : ""):"
                    + " \(String(decoding: e.canonicalRemoteJSON, as: UTF8.self))")
            print("effective hash: \(e.effectiveHash)")
            if let state = retained["\(gatewayTopic)/state"],
                let json = try? JSONSerialization.jsonObject(with: Data(state)) as? [String: Any],
                let reported = json["hash"] as? String
            {
                let hint = local == nil ? " (its local file may set other values)" : ""
                print(
                    reported == e.effectiveHash
                        ? "in sync: the gateway reports the same hash"
                        : "differs from the reported hash \(reported)\(hint)")
            }
        }
    }
}
