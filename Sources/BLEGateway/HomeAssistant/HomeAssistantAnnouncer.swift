import BLEConfiguration
import BLEDomain
import BLEHCI
import BLEPublishing
import BLETransport

/// When Home Assistant's discovery documents are published and removed: a pure state machine over the configuration
/// in force and Home Assistant's birth message; the runtime carries its messages out through the spool.
///
/// - `configure`: at start and after every change of the configuration in force. Documents that changed are
///   published (a component gone from a device goes once as a tombstone: its platform alone); a device no longer
///   configured, every device when discovery is turned off, and every device under the old prefix when the prefix
///   changes, get an empty retained payload, which removes them from Home Assistant.
/// - `homeAssistantOnline`: Home Assistant (re)started and subscribed afresh (or the gateway reconnected): every
///   document again.
/// - `deviceFound`: a device taken by a name or service entry was heard: announced from then on.
/// - `retainedDocument`: a document an earlier run left retained, for a device not announced now, is removed.
///
/// At most `max_devices` devices are announced; the others are counted (`refusedDevices`) and wait for room.
struct HomeAssistantAnnouncer: Sendable {
    /// One retained message: a discovery document, or an empty payload that removes one.
    struct Message: Sendable, Equatable {
        var topic: String
        var payload: [UInt8]
    }

    enum State: Sendable, Equatable {
        case disabled
        /// `published`: for each discovery topic, the document last sent and its components by id → platform.
        case announcing(prefix: String, published: [String: Published])
    }

    struct Published: Sendable, Equatable {
        var document: [UInt8]
        var components: [String: String]
    }

    let topics: Topics
    let version: String
    private(set) var state: State = .disabled
    /// The devices announced now, and those left out by `max_devices`.
    private(set) var announcedDevices = 0
    private(set) var refusedDevices = 0
    /// The documents in force (for `homeAssistantOnline`).
    private var current: [(topic: String, device: HomeAssistantDiscovery.Device)] = []
    private var discovery: HomeAssistantDiscovery?
    /// The configuration last given, and the devices found for entries without an address (`deviceFound`).
    private var configuration: GatewayConfiguration?
    private var found: [HomeAssistantDiscovery.Found] = []
    /// Broadcasting sensors heard, in the order heard, each with every quantity it has reported; at most
    /// `max_devices` kept (the rest could not be announced anyway).
    private var sensors: [HomeAssistantDiscovery.HeardSensor] = []
    /// Sensors not kept because the list was full, counted with the refused devices (health
    /// `homeassistant.refused_devices`), so a crowd of neighbours' sensors is visible, not silently left out; the set
    /// itself is bounded (beyond it the count stops growing).
    private var sensorsLeftOut: Set<BDAddress> = []
    static let sensorsLeftOutBound = 10_000

    init(topics: Topics, version: String) {
        self.topics = topics
        self.version = version
    }

    /// The discovery prefix whose `<prefix>/status` says when Home Assistant comes online (nil while disabled).
    var prefix: String? {
        if case .announcing(let p, _) = state { return p }
        return nil
    }

    /// A device taken by a `name_prefix` or `service` entry was heard (its link state changed): announced from now
    /// on, while its entry stays configured.
    mutating func deviceFound(_ address: BDAddress, intent: PeripheralIntent) -> [Message] {
        guard case .announcing = state, let c = configuration else { return [] }
        if case .address = intent.match { return [] }
        let f = HomeAssistantDiscovery.Found(address: address, intent: intent)
        guard !found.contains(f) else { return [] }
        found.removeAll { $0.address == address }
        found.append(f)
        return configure(c)
    }

    /// A sensor reading was published: a sensor not announced yet, or one reporting a quantity it had not, is
    /// announced (again) with every quantity it has reported.
    mutating func sensorHeard(_ address: BDAddress, model: String, keys: some Collection<String>) -> [Message] {
        guard case .announcing = state, let c = configuration, c.homeAssistant.sensors else { return [] }
        if let i = sensors.firstIndex(where: { $0.address == address }) {
            let new = keys.filter { !sensors[i].keys.contains($0) }
            guard !new.isEmpty || sensors[i].model != model else { return [] }
            sensors[i].keys += new
            sensors[i].model = model
        } else {
            guard sensors.count < c.homeAssistant.maxDevices else {
                if sensorsLeftOut.count < Self.sensorsLeftOutBound, sensorsLeftOut.insert(address).inserted {
                    refusedDevices += 1
                }
                return []
            }
            sensors.append(.init(address: address, model: model, keys: Array(keys)))
        }
        return configure(c)
    }

    mutating func configure(_ c: GatewayConfiguration) -> [Message] {
        configuration = c
        found.removeAll { !c.peripherals.contains($0.intent) }
        var out: [Message] = []
        let settings = c.homeAssistant
        var published: [String: Published] = [:]
        switch state {
        case .disabled:
            break
        case .announcing(let prefix, let p):
            if !settings.enabled || prefix != settings.discoveryPrefix {
                // Off, or moved: what this gateway announced under the old prefix goes away; the sensors' shared
                // documents are not its alone (other gateways announce them too) and stay.
                out += p.keys.sorted().filter { !Self.isShared($0) }.map { Message(topic: $0, payload: []) }
            } else {
                published = p
            }
        }
        guard settings.enabled else {
            state = .disabled
            sensors = []
            sensorsLeftOut = []
            current = []
            discovery = nil
            announcedDevices = 0
            refusedDevices = 0
            return out
        }
        let d = HomeAssistantDiscovery(settings: settings, topics: topics, version: version)
        if !settings.sensors {
            sensors = []
            sensorsLeftOut = []
        }
        let devices = d.devices(for: c, found: found, sensors: sensors)
        let kept = Array(devices.prefix(settings.maxDevices))
        announcedDevices = kept.count
        refusedDevices = devices.count - kept.count + sensorsLeftOut.count
        current = kept.map { (d.topic(for: $0), $0) }
        discovery = d
        var next: [String: Published] = [:]
        for (topic, device) in current {
            let components = Dictionary(device.components.map { ($0.id, $0.platform) }, uniquingKeysWith: { a, _ in a })
            let gone = (published[topic]?.components ?? [:]).filter { components[$0.key] == nil }
                .sorted { $0.key < $1.key }.map { (id: $0.key, platform: $0.value) }
            let plain = d.document(device)
            next[topic] = Published(document: plain, components: components)
            guard published[topic]?.document != plain || !gone.isEmpty else { continue }
            out.append(Message(topic: topic, payload: gone.isEmpty ? plain : d.document(device, tombstones: gone)))
        }
        for topic in published.keys.sorted() where next[topic] == nil && !Self.isShared(topic) {
            out.append(Message(topic: topic, payload: []))
        }
        state = .announcing(prefix: settings.discoveryPrefix, published: next)
        return out
    }

    /// A document under the sensors' shared node (`<prefix>/device/blegateway-sensors/…`).
    static func isShared(_ topic: String) -> Bool {
        topic.contains("/device/\(HomeAssistantDiscovery.sharedSensorNode)/")
    }

    /// Another gateway's document for a sensor (retained or live, on `<prefix>/device/blegateway-sensors/+/config`):
    /// the quantities it names that this gateway has not heard are taken into this gateway's document too, so every
    /// gateway's document for the sensor converges on the union and none removes another's entities by leaving them
    /// out. When the other document lacks a quantity this gateway has heard, this gateway's union goes again.
    mutating func sharedSensorDocument(topic: String, payload: [UInt8]) -> [Message] {
        guard case .announcing(let prefix, _) = state, let c = configuration, c.homeAssistant.sensors,
            topic.hasPrefix("\(prefix)/device/\(HomeAssistantDiscovery.sharedSensorNode)/"), !payload.isEmpty,
            case .object(let fields)? = try? RemoteJSONParser.parse(payload),
            case .object(let cmps)? = fields.first(where: { $0.0 == "cmps" })?.1
        else { return [] }
        let theirs = Set(
            cmps.compactMap { id, component -> String? in
                // A tombstone (its platform alone) names no quantity.
                guard id.hasPrefix("s_"), id != "s_rssi", case .object(let o) = component, o.count > 1 else {
                    return nil
                }
                return String(id.dropFirst(2))
            })
        guard
            let i = sensors.firstIndex(where: {
                topic.hasSuffix("/blegateway_sensor_\($0.address.topicComponent)/config")
            })
        else { return [] }
        let new = theirs.subtracting(sensors[i].keys).sorted()
        sensors[i].keys += new
        // Over the keys that become entities only: one that does not (`pm2.5`) is never in anyone's document, and
        // counting it missing made every gateway republish on hearing its own document, for ever.
        let missing = !Set(sensors[i].keys.filter(HomeAssistantDiscovery.isAnnouncedKey)).isSubset(of: theirs)
        guard !new.isEmpty || missing else { return [] }
        var out = configure(c)
        if missing, !out.contains(where: { $0.topic == topic }), let doc = current.first(where: { $0.topic == topic }),
            let discovery
        {
            out.append(Message(topic: topic, payload: discovery.document(doc.device)))
        }
        return out
    }

    /// A retained document the broker holds under the prefix, seen when subscribing to `<prefix>/device/<node>/+/config`
    /// (and, for what earlier versions left without a node id, `<prefix>/device/+/config`): one of this gateway's from
    /// an earlier run (its device is this gateway, or `via_device` this gateway) that is
    /// not announced now — configuration removed it while the gateway was stopped — is removed. Not while a
    /// `name_prefix` or `service` entry is configured: its devices are announced only once heard again, and removing
    /// them at every start would make Home Assistant forget and re-create them.
    func retainedDocument(topic: String, payload: [UInt8]) -> [Message] {
        let id = topics.gatewayID
        let gateways = [HomeAssistantDiscovery.gatewayDeviceID(id), HomeAssistantDiscovery.legacyGatewayDeviceID(id)]
        // This gateway's own sensor documents of earlier versions (one per gateway, its id in the object id): removed,
        // the sensors' shared documents replace them.
        if case .announcing(let prefix, let published) = state,
            published[topic] == nil, !payload.isEmpty,
            topic.hasPrefix("\(prefix)/device/\(HomeAssistantDiscovery.nodeID(id))/\(gateways[0])_sensor_")
                || topic.hasPrefix("\(prefix)/device/\(gateways[1])_sensor_")
        {
            return [Message(topic: topic, payload: [])]
        }
        let byAddressOnly =
            configuration?.peripherals.allSatisfy {
                if case .address = $0.match { true } else { false }
            } ?? true
        guard byAddressOnly, case .announcing(let prefix, let published) = state, published[topic] == nil,
            !payload.isEmpty,
            topic.hasPrefix("\(prefix)/device/"), topic.hasSuffix("/config"),
            case .object(let fields)? = try? RemoteJSONParser.parse(payload),
            case .object(let dev)? = fields.first(where: { $0.0 == "dev" })?.1
        else { return [] }
        let identifiers: [RemoteJSON] =
            dev.first(where: { $0.0 == "identifiers" }).flatMap {
                if case .array(let a) = $0.1 { return a } else { return nil }
            } ?? []
        let via = dev.first(where: { $0.0 == "via_device" })?.1
        guard gateways.contains(where: { identifiers.contains(.string($0)) || via == .string($0) }) else { return [] }
        return [Message(topic: topic, payload: [])]
    }

    /// Home Assistant said `online` on `<prefix>/status`: it may have lost what it knew, so everything again.
    func homeAssistantOnline() -> [Message] {
        guard let discovery else { return [] }
        return current.map { Message(topic: $0.topic, payload: discovery.document($0.device)) }
    }
}
