import BLEDomain
import BLESpool

extension GatewayReadings {
    /// `config/state` (schema/v1/config-state.json): retained and durable, so the last verdict is what a dashboard
    /// finds, and its `seq` takes its place in the stream.
    func configState(_ o: RemoteConfigController.Outcome, hash: String, layers: [RemoteConfigController.Layer: Int?],
                     signedOnly: Bool = false,
                     floors: [RemoteConfigController.Layer: (version: Int, sha256: String)] = [:],
                     restartRequired: [String], ts: Double, synced: Bool) -> Reading {
        var w = JSONObjectWriter()
        w.string("status", o.status == .rejected ? "rejected" : "applied")
        w.string("layer", o.layer.rawValue)
        if o.status == .cleared { w.bool("cleared", true) }
        w.int("version", o.version)
        w.string("hash", hash)
        w.object("in_force") { l in
            for layer in [RemoteConfigController.Layer.fleet, .gateway] {
                guard let v = layers[layer] else { continue }
                l.object(layer.rawValue) { $0.int("version", v) }
            }
        }
        // What `config push` checks before it sends: whether only signed documents apply, and below what.
        if signedOnly {
            w.bool("signed_only", true)
            w.object("floors") { l in
                for layer in [RemoteConfigController.Layer.fleet, .gateway] {
                    guard let f = floors[layer] else { continue }
                    l.object(layer.rawValue) { $0.int("version", f.version); $0.string("sha256", f.sha256) }
                }
            }
        }
        w.raw("errors", Self.issues(o.errors))
        w.raw("warnings", Self.issues(o.warnings))
        if !restartRequired.isEmpty {
            var list: [UInt8] = [UInt8(ascii: "[")]
            for (n, p) in restartRequired.enumerated() {
                if n > 0 { list.append(UInt8(ascii: ",")) }
                JSONWriter.appendString(p, to: &list)
            }
            list.append(UInt8(ascii: "]"))
            w.raw("restart_required", list)
        }
        return Reading(.state, topic: topics.configState, body: w.finished, qos: stateQoS, retain: true, ts: ts,
                       clockSynchronized: synced, run: run)
    }

    static func issues(_ list: [ConfigIssue]) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "[")]
        for (n, i) in list.prefix(100).enumerated() {
            if n > 0 { out.append(UInt8(ascii: ",")) }
            var o = JSONObjectWriter()
            o.string("path", i.path)
            o.string("reason", i.reason)
            out.append(contentsOf: o.finished)
        }
        out.append(UInt8(ascii: "]"))
        return out
    }
}
