import Testing

@testable import BLEFleet

@Suite struct PrometheusExpositionTests {
    @Test func gatewaysAreLabelledAndLabelValuesEscaped() {
        var m = FleetModel(prefix: "demo")
        let env = #""run":"r","seq":1,"ts":5,"clock_synced":true"#
        m.receive(
            topic: "demo/gw-1/status",
            payload: Array(
                #"{\#(env),"state":"online","gateway":"gw-1","version":"0.1\"\\\n","started":1}"#.utf8), retained: true,
            now: 0)
        m.receive(
            topic: "demo/gw-2/status",
            payload: Array(
                #"{\#(env),"state":"offline","gateway":"gw-2","version":"0.1.0","started":1}"#.utf8), retained: true,
            now: 0)
        let text = PrometheusExposition.render(m, broker: .init(url: "mqtt://x", connected: true))
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.contains("blegateway_gateway_up{gateway=\"gw-1\"} 1"))
        #expect(lines.contains("blegateway_gateway_up{gateway=\"gw-2\"} 0"))
        #expect(lines.contains(#"blegateway_gateway_info{gateway="gw-1",version="0.1\"\\\n",run="r"} 1"#))
        #expect(lines.contains("# TYPE blegateway_gateway_up gauge"))
        #expect(lines.contains("blegateway_fleet_broker_connected 1"))
        // One TYPE line per family, before its samples.
        #expect(lines.filter { $0 == "# TYPE blegateway_fleet_bad_input_total counter" }.count == 1)
    }

    /// Every drop a gateway's health counts is a metric with the stage it happened at, so a dashboard sees all of them,
    /// not only the spool's.
    @Test func everyDropOnTheHealthTopicIsAMetricByStage() {
        var m = FleetModel(prefix: "demo")
        let health =
            #"{"run":"r","seq":2,"ts":6,"clock_synced":true,"uptime_s":5,"#
            + #""spool":{"depth":0,"dropped_samples":0},"#
            + #""publish":{"acknowledged":1,"rate_per_s":1,"connected":true,"dropped_deliveries":7},"#
            + #""scan":{"reports":10,"dropped":{"transport":1,"controller":2,"scanner":3},"#
            + #""reassembly":{"evicted":4,"expired":5,"oversized":6},"raw_rate_limited":8,"telemetry_discarded":9},"#
            + #""memory":{"rss_bytes":1}}"#
        m.receive(topic: "demo/gw-1/health", payload: Array(health.utf8), retained: false, now: 0)
        let lines = PrometheusExposition.render(m, broker: .init(url: "mqtt://x", connected: true))
            .split(separator: "\n").map(String.init)
        for (stage, n) in [
            ("transport", 1), ("controller", 2), ("scanner", 3), ("reassembly_evicted", 4),
            ("reassembly_expired", 5), ("reassembly_oversized", 6), ("subscriptions", 7),
            ("raw_rate_limited", 8), ("telemetry_discarded", 9),
        ] {
            #expect(lines.contains(#"blegateway_dropped_total{gateway="gw-1",stage="\#(stage)"} \#(n)"#), "\(stage)")
        }
    }

    /// What the lease did and ignored is published per instance, so two instances' dashboards show which one fenced
    /// itself and how many late claims from a cut-off peer were refused.
    @Test func theLeasesEventsAreCountersByKind() {
        var broker = FleetViews.BrokerState(url: "mqtt://x", connected: true, instance: "fleet-a")
        broker.role = "active"
        broker.lease.activations = 2
        broker.lease.fences = 1
        broker.lease.staleClaims = 3
        broker.lease.unreadable = 4
        let lines = PrometheusExposition.render(FleetModel(prefix: "demo"), broker: broker)
            .split(separator: "\n").map(String.init)
        #expect(lines.contains(#"blegateway_fleet_active{instance="fleet-a"} 1"#))
        for (kind, n) in [("activation", 2), ("fence", 1), ("stale_claim", 3), ("unreadable_claim", 4)] {
            #expect(lines.contains(#"blegateway_fleet_lease_events_total{instance="fleet-a",kind="\#(kind)"} \#(n)"#))
        }
        #expect(lines.filter { $0 == "# TYPE blegateway_fleet_lease_events_total counter" }.count == 1)
    }
}
