import BLEDomain
import BLEHCI
import BLETransport

/// `run --trace ADDRESS`: every report from one address is logged with what the configuration in force does with it
/// (SightingExplainer), from the running gateway — the answer to "why is this device not published" without stopping
/// the gateway to run `explain`.
struct TraceState: Sendable {
    var address: BDAddress
    /// Rebuilt when a remote document changes the configuration in force.
    var explainer: SightingExplainer?
}

extension GatewayRuntime {
    /// Starts tracing `address` (one at a time; nil stops).
    public func trace(_ address: BDAddress?) {
        state.withLock { $0.traced = address.map { TraceState(address: $0, explainer: nil) } }
    }

    func traceIfTraced(_ s: Sighting) {
        // The common case, untraced or another address, costs one lock and a compare.
        guard state.withLock({ $0.traced?.address == s.address }) else { return }
        let c = inForce.withLock { $0 }
        let now = clock.now().seconds
        let steps = state.withLock { runtime -> [SightingExplainer.Step] in
            guard var t = runtime.traced else { return [] }
            if t.explainer?.configuration != c { t.explainer = try? SightingExplainer(configuration: c) }
            let steps = t.explainer?.explain(s, at: now) ?? []
            runtime.traced = t
            return steps
        }
        logger.notice("trace \(s.address): \(steps.map(\.description).joined(separator: " | "))")
    }
}
