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
        traced.withLock { $0 = address.map { TraceState(address: $0, explainer: nil) } }
    }

    func traceIfTraced(_ s: Sighting) {
        // The common case, untraced or another address, costs one lock and a compare.
        guard traced.withLock({ $0?.address == s.address }) else { return }
        let c = inForce.withLock { $0 }
        let now = clock.now().seconds
        let steps = traced.withLock { t -> [SightingExplainer.Step] in
            guard var state = t else { return [] }
            if state.explainer?.configuration != c { state.explainer = try? SightingExplainer(configuration: c) }
            let steps = state.explainer?.explain(s, at: now) ?? []
            t = state
            return steps
        }
        logger.notice("trace \(s.address): \(steps.map(\.description).joined(separator: " | "))")
    }
}
