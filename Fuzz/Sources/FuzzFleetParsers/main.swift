// One libFuzzer input is a run of MQTT messages as the fleet service receives them: anyone with publish access to the
// broker writes these bytes, and the fleet service folds every one of them (`FleetModel.receive`, whose payloads
// `FleetJSON` reads), hands the beacon readings to presence and takes `<prefix>/fleet/site` as a new site description
// (`SiteDescription`, YAML or JSON). Any trap or sanitizer report is a finding: each promises a count, a recorded
// problem or a refusal, whatever the bytes.
//
// A record is [selector octet][payload length, 2 octets big-endian][payload]; the selector's low seven bits pick one
// of the schema's topics below (a fuzzer mutates payloads far better than topic strings) and its top bit marks the
// message retained.
import BLEFleet

let prefix = "fz"
let topics = [
    "fz/gw-1/status", "fz/gw-1/adapter", "fz/gw-1/health",
    "fz/gw-1/beacons/ibeacon-e2c56db5dffb48d2b060d0f5a71096e0-2-4",
    "fz/gw-2/beacons/eddystone-uid-00112233445566778899",
    "fz/gw-1/regions/lab", "fz/gw-1/peripherals/C4:BB:CA:D0:7F:7D/state", "fz/gw-1/peripherals/C4:BB:CA:D0:7F:7D/rssi",
    "fz/gw-1/config/state", "fz/gw-1/sensors/A4:C1:38:00:00:01", "fz/gw-1/raw/C4:BB:CA:D0:7F:7D",
    "fz/gw-1/adapters/0", "fz/gw-1/enrol/state", "fz/fleet/site", "fz/gw-2/status", "fz/gw-2/health",
]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeBufferPointer(start: data, count: size)
    var model = FleetModel(prefix: prefix)
    var presence = FleetPresence(sites: [prefix], configured: nil)
    var now = 1_795_243_048.5
    var i = 0
    while i + 3 <= input.count {
        let selector = input[i]
        let topic = topics[Int(selector & 0x7F) % topics.count]
        let length = min(Int(input[i + 1]) << 8 | Int(input[i + 2]), input.count - i - 3)
        let payload = Array(input[(i + 3)..<(i + 3 + length)])
        i += 3 + length
        now += 0.25
        // As `FleetService.ingest` does: fold, then presence for a beacon reading just folded, or the site.
        let parsed = model.receive(
            topic: topic, payload: payload, retained: selector & 0x80 != 0, now: now)
        switch parsed?.topic {
        case .beacon(let gateway, let beacon)?:
            if let reading = model.gateways[gateway]?.beacons[beacon], reading.receivedAt == now {
                presence.observe(prefix, gateway: gateway, beacon: beacon, reading: reading, now: now)
            }
        case .notFromAGateway? where topic == "fz/fleet/site":
            _ = presence.receiveSite(prefix, payload: payload, isFirstSite: true)
        default:
            break
        }
    }
    // Presence decides rooms once a second; a few seconds of it over what arrived.
    for s in 1...3 { _ = presence.tick(now: now + Double(s)) }
    model.forgetBeacons(olderThan: 60, now: now + 120)
    return 0
}
