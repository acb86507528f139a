import BLEDomain
import BLEHCI
import BLEPublishing
import BLETransport
import Foundation
import Testing

@testable import BLEConfiguration
@testable import BLEGateway

/// Broadcasting sensors in Home Assistant: one device per sensor address (shared by the gateways that hear it), this
/// gateway's entities on it, announced once heard and again when a new quantity appears; literal JSON where it
/// matters, the announcer's lifecycle for the rest.
@Suite struct HomeAssistantSensorDiscoveryTests {
    typealias D = HomeAssistantDiscovery
    static let address = BDAddress(rawValue: 0xA4C1_3800_0073)
    /// The sensor's one document, whichever gateway announces it.
    static let topic = "homeassistant/device/blegateway-sensors/blegateway_sensor_a4c138000073/config"
    /// Where an earlier version put gw-1's own document for it.
    static let oldTopic = "homeassistant/device/gw-1/blegateway_gw-1_sensor_a4c138000073/config"

    static func configuration(_ yaml: String = "homeassistant: {enabled: true}") throws -> GatewayConfiguration {
        try HomeAssistantDiscoveryTests.configuration(yaml)
    }

    /// Three gateways used to give three entities per quantity ("Temperature (gw-lab)" …). Now every gateway that hears
    /// the sensor announces the same document at the same topic: one entity per quantity, following every gateway's
    /// stream (a wildcard), naming the gateway that heard the newest frame best.
    @Test func aSensorIsOneDocumentWhicheverGatewayHearsItWithOneEntityPerQuantity() throws {
        let c = try Self.configuration()
        let d = HomeAssistantDiscoveryTests.discovery(c.homeAssistant)
        let heard = D.HeardSensor(
            address: Self.address, model: "BTHome",
            keys: ["temperature_c", "humidity_pct", "battery_pct", "door"])
        let device = d.sensorDevice(heard)
        let other = HomeAssistantDiscovery(
            settings: c.homeAssistant, topics: try Topics(prefix: "ble", gatewayID: "gw-2"),
            version: "0.1.0")
        #expect(d.topic(for: device) == Self.topic)
        #expect(other.topic(for: other.sensorDevice(heard)) == Self.topic)
        #expect(d.document(device) == other.document(other.sensorDevice(heard)), "the same bytes from every gateway")
        #expect(
            HomeAssistantDiscoveryTests.text(device.device) == #"{"identifiers":["blegateway_sensor_a4c138000073"],"#
                + #""connections":[["bluetooth","A4:C1:38:00:00:73"]],"name":"BTHome A4:C1:38:00:00:73","model":"BTHome"}"#
        )
        #expect(
            device.components.map(\.id) == ["s_battery_pct", "s_door", "s_humidity_pct", "s_temperature_c", "s_rssi"])
        let temperature = HomeAssistantDiscoveryTests.text(device.components[3].options)
        #expect(temperature.contains(#""p":"sensor","unique_id":"blegateway_sensor_a4c138000073_temperature_c""#))
        #expect(temperature.contains(#""name":"Temperature","#))
        #expect(!temperature.contains("availability"), "no gateway's status says whether a sensor is there")
        #expect(
            temperature.contains(
                #""device_class":"temperature","state_class":"measurement","unit_of_measurement":"°C""#))
        #expect(temperature.contains(#""state_topic":"ble/+/sensors/a4c138000073""#))
        #expect(temperature.contains(#""json_attributes_topic":"ble/+/sensors/a4c138000073""#))
        #expect(temperature.contains(D.heardBest))
        // A frame without the quantity keeps the entity's state (a BTHome button sends its event alone): the template
        // renders nothing, which Home Assistant ignores for a numeric sensor. Rendering `this.state` back gave the
        // state converted to the house's units (°F) as a native °C value.
        #expect(
            temperature.contains(
                #""value_template":"{% if 'temperature_c' in value_json['values'] %}{{ value_json['values']['temperature_c'] }}{% endif %}""#
            ))
        #expect(!temperature.contains("this.state"))
        let door = HomeAssistantDiscoveryTests.text(device.components[1].options)
        #expect(door.contains(#""p":"binary_sensor""#) && door.contains(#""device_class":"door""#))
        #expect(door.contains("{{ 'ON' if value_json['values']['door'] else 'OFF' }}{% endif %}"))
        #expect(!door.contains("this.state"))
        let battery = HomeAssistantDiscoveryTests.text(device.components[0].options)
        #expect(battery.contains(#""entity_category":"diagnostic""#))
    }

    /// Each gateway's document converges on every quantity any of them has heard: a gateway that sees another's
    /// document naming a quantity it has not heard takes it in; one that sees a document lacking one it has heard
    /// sends its own again. Neither removes the other's entities by leaving them out.
    @Test func gatewaysDocumentsForASensorConvergeOnTheUnionOfWhatTheyHeard() throws {
        var a = HomeAssistantAnnouncer(topics: HomeAssistantDiscoveryTests.topics, version: "0.1.0")
        let c = try Self.configuration()
        _ = a.configure(c)
        _ = a.sensorHeard(Self.address, model: "BTHome", keys: ["temperature_c"])
        let d = HomeAssistantDiscoveryTests.discovery(c.homeAssistant)
        func document(_ keys: [String]) -> [UInt8] {
            d.document(d.sensorDevice(.init(address: Self.address, model: "BTHome", keys: keys)))
        }
        let richer = a.sharedSensorDocument(topic: Self.topic, payload: document(["temperature_c", "humidity_pct"]))
        #expect(HomeAssistantDiscoveryTests.messages(richer) == ["publish \(Self.topic)"])
        #expect(richer.first?.payload == document(["temperature_c", "humidity_pct"]))
        #expect(
            a.sharedSensorDocument(topic: Self.topic, payload: document(["humidity_pct", "temperature_c"])).isEmpty,
            "the same quantities: nothing to say")
        let poorer = a.sharedSensorDocument(topic: Self.topic, payload: document(["temperature_c"]))
        #expect(poorer.map(\.payload) == [document(["temperature_c", "humidity_pct"])], "ours again, with the union")
        // Another sensor's document, one not heard here, or an empty one: nothing.
        let unheard = "homeassistant/device/blegateway-sensors/blegateway_sensor_a4c138000099/config"
        #expect(a.sharedSensorDocument(topic: unheard, payload: document(["co2_ppm"])).isEmpty)
        #expect(a.sharedSensorDocument(topic: Self.topic, payload: []).isEmpty)
    }

    /// A quantity whose key cannot be an entity id (`pm2.5`) is in no document: hearing its own document back must not
    /// count it missing, or every gateway republishes on every echo of its own, for ever.
    @Test func aKeyThatIsNoEntityDoesNotMakeAGatewayRepublishItsOwnDocument() throws {
        var a = HomeAssistantAnnouncer(topics: HomeAssistantDiscoveryTests.topics, version: "0.1.0")
        let c = try Self.configuration()
        _ = a.configure(c)
        let announced = a.sensorHeard(Self.address, model: "BTHome", keys: ["temperature_c", "pm2.5"])
        let own = try #require(announced.first { $0.topic == Self.topic })
        #expect(!String(decoding: own.payload, as: UTF8.self).contains("pm2.5"))
        let echo = a.sharedSensorDocument(topic: Self.topic, payload: own.payload)
        #expect(echo.isEmpty, "its own document heard back: nothing to say")
    }

    @Test(
        arguments: [
            ("temperature_c_2", "sensor", "Temperature 2", "temperature", "°C"),
            ("pm25_ugm3", "sensor", "PM2.5", "pm25", "µg/m³"),
            ("battery_low", "binary_sensor", "Battery low", "battery", nil),
            ("button_event", "event", "Button", "button", nil),
            ("button_event_2", "event", "Button 2", "button", nil),
            ("dimmer_event", "event", "Dimmer", "button", nil),
            ("volume_l", "sensor", "Volume", "volume", "L"),
            ("some_new_quantity", "sensor", "Some new quantity", nil, nil),
        ] as [(String, String, String, String?, String?)])
    func quantitiesMapToHomeAssistantsClassesAndUnits(
        key: String, platform: String, name: String,
        deviceClass: String?, unit: String?
    ) {
        let k = D.kind(forKey: key)
        #expect(k.platform == platform && k.name == name && k.deviceClass == deviceClass && k.unit == unit)
    }

    /// A button is an event entity, not a number: a sensor's state does not change when the same code comes twice, so
    /// an automation on it never fired for a second press of the same kind; an event fires once per message.
    @Test func aButtonIsAnEventEntityWhoseTemplateNamesEachPressAndNothingElse() throws {
        let d = HomeAssistantDiscoveryTests.discovery(try Self.configuration().homeAssistant)
        let device = d.sensorDevice(
            .init(address: Self.address, model: "BTHome", keys: ["button_event", "battery_pct"]))
        let button = HomeAssistantDiscoveryTests.text(
            try #require(device.components.first { $0.id == "s_button_event" }).options)
        #expect(button.contains(#""p":"event""#) && button.contains(#""device_class":"button""#))
        #expect(
            button.contains(
                #""event_types":["press","double_press","triple_press","long_press","long_double_press","long_triple_press","hold_press"]"#
            ))
        #expect(
            button.contains(
                #"{% set t = {1: 'press', 2: 'double_press', 3: 'triple_press', 4: 'long_press', 5: 'long_double_press', "#
                    + #"6: 'long_triple_press', 128: 'hold_press'}.get(value_json['values'].get('button_event', 0) | int) %}"#
                    + #"{% set c = value_json.get('counter') %}{% if t and (c is none or c != this.attributes.get('counter')) %}"#
                    + #"{{ {'event_type': t, 'counter': c, 'gateway': value_json.get('gateway')} | tojson }}{% endif %}"#
            ))
        #expect(!button.contains("state_class") && !button.contains("this.state"))
        // The volume is a total for Home Assistant, never a measurement.
        #expect(D.kind(forKey: "volume_l").stateClass == "total")
    }

    /// The link sensor's options are every state the schema lets `…/peripherals/<address>/state` carry.
    @Test func theLinkSensorOffersEveryStateThePeripheralSchemaAllows() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "../../schema/v1/peripheral-state.json")
        let schema = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        let state = try #require((schema["properties"] as? [String: Any])?["state"] as? [String: Any])
        #expect(D.linkStates == state["enum"] as? [String])
    }

    @Test func aSensorIsAnnouncedOnceHeardAndAgainOnlyWhenItReportsSomethingNew() throws {
        var a = HomeAssistantAnnouncer(topics: HomeAssistantDiscoveryTests.topics, version: "0.1.0")
        var c = try Self.configuration()
        _ = a.configure(c)
        let first = a.sensorHeard(Self.address, model: "BTHome", keys: ["temperature_c", "humidity_pct"])
        #expect(HomeAssistantDiscoveryTests.messages(first) == ["publish \(Self.topic)"])
        #expect(a.sensorHeard(Self.address, model: "BTHome", keys: ["temperature_c"]).isEmpty)
        let grown = a.sensorHeard(Self.address, model: "BTHome", keys: ["button_event"])
        #expect(HomeAssistantDiscoveryTests.messages(grown) == ["publish \(Self.topic)"])
        #expect(
            HomeAssistantDiscoveryTests.text(grown[0].payload).contains("s_temperature_c"),
            "what was reported before stays announced")
        #expect(HomeAssistantDiscoveryTests.messages(a.homeAssistantOnline()).contains("publish \(Self.topic)"))
        // Turned off here: nothing is announced while off, and the shared document stays (other gateways announce it).
        c.homeAssistant.sensors = false
        #expect(a.configure(c).isEmpty)
        #expect(a.sensorHeard(Self.address, model: "BTHome", keys: ["temperature_c"]).isEmpty)
    }

    @Test func sensorsBeyondTheDeviceCapAreNotAnnounced() throws {
        var a = HomeAssistantAnnouncer(topics: HomeAssistantDiscoveryTests.topics, version: "0.1.0")
        let c = try Self.configuration("homeassistant: {enabled: true, max_devices: 2}")
        _ = a.configure(c)
        #expect(a.sensorHeard(Self.address, model: "BTHome", keys: ["temperature_c"]).count == 1)
        let other = BDAddress(rawValue: 0xA4C1_3800_0074)
        #expect(a.sensorHeard(other, model: "BTHome", keys: ["temperature_c"]).isEmpty)
        #expect(a.announcedDevices == 2)
        #expect(a.refusedDevices == 1, "a sensor left out is counted, not silent")
        _ = a.sensorHeard(other, model: "BTHome", keys: ["temperature_c"])
        #expect(a.refusedDevices == 1, "once per sensor, not per reading")
    }

    /// The per-gateway sensor documents earlier versions left (one per gateway, its id in the object id) are removed at
    /// start, whether or not `sensors` is on: the shared document replaces them. Another gateway's are its own to
    /// remove, and the shared document is never removed as stale.
    @Test func thisGatewaysPerGatewaySensorDocumentsOfEarlierVersionsAreRemoved() throws {
        let document = Array(#"{"dev":{"identifiers":["blegateway_sensor_a4c138000073"]}}"#.utf8)
        for yaml in ["homeassistant: {enabled: true}", "homeassistant: {enabled: true, sensors: false}"] {
            var a = HomeAssistantAnnouncer(topics: HomeAssistantDiscoveryTests.topics, version: "0.1.0")
            _ = a.configure(try Self.configuration(yaml))
            #expect(
                HomeAssistantDiscoveryTests.messages(a.retainedDocument(topic: Self.oldTopic, payload: document))
                    == ["remove \(Self.oldTopic)"])
            let nodeless = "homeassistant/device/blegateway_gw-1_sensor_a4c138000073/config"
            #expect(
                HomeAssistantDiscoveryTests.messages(a.retainedDocument(topic: nodeless, payload: document))
                    == ["remove \(nodeless)"])
            let other = "homeassistant/device/gw-2/blegateway_gw-2_sensor_a4c138000073/config"
            #expect(a.retainedDocument(topic: other, payload: document).isEmpty)
            #expect(a.retainedDocument(topic: Self.topic, payload: document).isEmpty)
        }
    }
}
