import BLEConfiguration
import BLEDomain
import BLESpool
import BLETransport

extension GatewayReadings {
    /// `config/state` (schema/v1/config-state.json): retained and durable, so the last verdict is what a dashboard
    /// finds, and its `seq` takes its place in the stream.
    func configState(
        _ o: RemoteConfigController.Outcome, hash: String, layers: [RemoteConfigLayer: Int?],
        signedOnly: Bool = false,
        floors: [RemoteConfigLayer: (version: Int, sha256: String)] = [:],
        restartRequired: [String], ts: Double, synced: Bool
    ) -> Reading {
        var w = JSONObjectWriter()
        w.string("status", o.status == .rejected ? "rejected" : "applied")
        w.string("layer", o.layer.rawValue)
        if o.status == .cleared { w.bool("cleared", true) }
        w.int("version", o.version)
        w.string("hash", hash)
        w.object("in_force") { l in
            for layer in [RemoteConfigLayer.fleet, .gateway] {
                guard let v = layers[layer] else { continue }
                l.object(layer.rawValue) { $0.int("version", v) }
            }
        }
        // What `config push` checks before it sends: whether only signed documents apply, and below what.
        if signedOnly {
            w.bool("signed_only", true)
            w.object("floors") { l in
                for layer in [RemoteConfigLayer.fleet, .gateway] {
                    guard let f = floors[layer] else { continue }
                    l.object(layer.rawValue) {
                        $0.int("version", f.version)
                        $0.string("sha256", f.sha256)
                    }
                }
            }
        }
        // Within the state budget whatever the document held: what does not fit is counted, not sent.
        let (errors, moreErrors) = Self.issues(o.errors, budget: Self.maxStateBytes / 2)
        let (warnings, moreWarnings) = Self.issues(o.warnings, budget: Self.maxStateBytes / 4)
        w.raw("errors", errors)
        if moreErrors > 0 { w.int("truncated_errors", moreErrors) }
        w.raw("warnings", warnings)
        if moreWarnings > 0 { w.int("truncated_warnings", moreWarnings) }
        if !restartRequired.isEmpty {
            var list: [UInt8] = [UInt8(ascii: "[")]
            for (n, p) in restartRequired.enumerated() {
                if n > 0 { list.append(UInt8(ascii: ",")) }
                JSONWriter.appendString(p, to: &list)
            }
            list.append(UInt8(ascii: "]"))
            w.raw("restart_required", list)
        }
        return Reading(
            .state, topic: topics.configState, body: w.finished, qos: stateQoS, retain: true, ts: ts,
            clockSynchronized: synced, run: run)
    }

    /// The issues as a JSON array within `budget` bytes, each reason cut at 1,000 characters (ending in "…"); and how
    /// many issues were left out.
    static func issues(_ list: [ConfigIssue], budget: Int) -> ([UInt8], Int) {
        var out: [UInt8] = []
        let omitted = JSONArrayWriter.write(list, to: &out, budget: budget) { i in
            var o = JSONObjectWriter()
            o.string("path", i.path.count > 1000 ? String(i.path.prefix(999)) + "…" : i.path)
            o.string("reason", i.reason.count > 1000 ? String(i.reason.prefix(999)) + "…" : i.reason)
            return o.finished
        }
        return (out, omitted)
    }
}
