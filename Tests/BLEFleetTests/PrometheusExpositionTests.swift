import Testing
@testable import BLEFleet

@Suite struct PrometheusExpositionTests {
    @Test func gatewaysAreLabelledAndLabelValuesEscaped() {
        var m = FleetModel(prefix: "demo")
        let env = #""run":"r","seq":1,"ts":5,"clock_synced":true"#
        m.receive(topic: "demo/gw-1/status", payload: Array(
            #"{\#(env),"state":"online","gateway":"gw-1","version":"0.1\"\\\n","started":1}"#.utf8), retained: true, now: 0)
        m.receive(topic: "demo/gw-2/status", payload: Array(
            #"{\#(env),"state":"offline","gateway":"gw-2","version":"0.1.0","started":1}"#.utf8), retained: true, now: 0)
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
}
