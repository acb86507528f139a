/// What a sensor value measures, named as Home Assistant's device classes are, with the SI (or the
/// device class's customary) unit in the name: `temperature_c`, `humidity_pct`, `pressure_hpa` …
///
/// An open set of codes: formats add members here, the publisher only reads `name`.
public struct SensorQuantity: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    // Measurements.
    public static let packetID = Self(rawValue: 0)
    public static let batteryPercent = Self(rawValue: 1)
    public static let temperature = Self(rawValue: 2)
    public static let humidity = Self(rawValue: 3)
    public static let pressure = Self(rawValue: 4)
    public static let illuminance = Self(rawValue: 5)
    public static let massKilograms = Self(rawValue: 6)
    public static let massPounds = Self(rawValue: 7)
    public static let dewPoint = Self(rawValue: 8)
    public static let count = Self(rawValue: 9)
    public static let energy = Self(rawValue: 10)
    public static let power = Self(rawValue: 11)
    public static let voltage = Self(rawValue: 12)
    public static let pm25 = Self(rawValue: 13)
    public static let pm10 = Self(rawValue: 14)
    public static let co2 = Self(rawValue: 15)
    public static let tvoc = Self(rawValue: 16)
    public static let moisture = Self(rawValue: 17)
    public static let rotation = Self(rawValue: 18)
    public static let distance = Self(rawValue: 19)
    public static let duration = Self(rawValue: 20)
    public static let current = Self(rawValue: 21)
    public static let speed = Self(rawValue: 22)
    public static let uvIndex = Self(rawValue: 23)
    public static let volume = Self(rawValue: 24)
    public static let volumeFlowRate = Self(rawValue: 25)
    public static let gas = Self(rawValue: 26)
    public static let water = Self(rawValue: 27)
    public static let timestamp = Self(rawValue: 28)
    public static let acceleration = Self(rawValue: 29)
    public static let gyroscope = Self(rawValue: 30)
    public static let volumeStorage = Self(rawValue: 31)
    public static let conductivity = Self(rawValue: 32)
    public static let direction = Self(rawValue: 33)
    public static let precipitation = Self(rawValue: 34)
    public static let channel = Self(rawValue: 35)
    public static let rotationalSpeed = Self(rawValue: 36)
    public static let buttonEvent = Self(rawValue: 37)
    public static let dimmerEvent = Self(rawValue: 38)
    public static let dimmerSteps = Self(rawValue: 39)
    public static let accelerationX = Self(rawValue: 40)
    public static let accelerationY = Self(rawValue: 41)
    public static let accelerationZ = Self(rawValue: 42)
    public static let movementCounter = Self(rawValue: 43)
    public static let txPower = Self(rawValue: 44)
    public static let formaldehyde = Self(rawValue: 45)
    public static let signalStrength = Self(rawValue: 46)
    public static let deviceType = Self(rawValue: 47)
    public static let firmwareVersion = Self(rawValue: 48)
    public static let lightLevel = Self(rawValue: 49)
    public static let settingsRevision = Self(rawValue: 50)
    public static let pm1 = Self(rawValue: 51)
    public static let pm4 = Self(rawValue: 52)
    /// Sensirion's VOC and NOx indices (1…500), as RuuviTag Air reports them.
    public static let vocIndex = Self(rawValue: 53)
    public static let noxIndex = Self(rawValue: 54)
    /// A-weighted sound level.
    public static let soundLevel = Self(rawValue: 55)
    // Victron Instant Readout.
    public static let chargeState = Self(rawValue: 56)
    public static let chargerError = Self(rawValue: 57)
    public static let loadCurrent = Self(rawValue: 58)
    public static let consumedAmpHours = Self(rawValue: 59)
    public static let remainingTime = Self(rawValue: 60)
    public static let starterVoltage = Self(rawValue: 61)
    public static let midpointVoltage = Self(rawValue: 62)

    // Binary states (0 or 1), BTHome 0x0F…0x2D.
    public static let generic = Self(rawValue: 64)
    public static let powerOn = Self(rawValue: 65)
    public static let opening = Self(rawValue: 66)
    public static let batteryLow = Self(rawValue: 67)
    public static let batteryCharging = Self(rawValue: 68)
    public static let carbonMonoxide = Self(rawValue: 69)
    public static let cold = Self(rawValue: 70)
    public static let connectivity = Self(rawValue: 71)
    public static let door = Self(rawValue: 72)
    public static let garageDoor = Self(rawValue: 73)
    public static let gasDetected = Self(rawValue: 74)
    public static let heat = Self(rawValue: 75)
    public static let light = Self(rawValue: 76)
    public static let lock = Self(rawValue: 77)
    public static let moistureDetected = Self(rawValue: 78)
    public static let motion = Self(rawValue: 79)
    public static let moving = Self(rawValue: 80)
    public static let occupancy = Self(rawValue: 81)
    public static let plug = Self(rawValue: 82)
    public static let presence = Self(rawValue: 83)
    public static let problem = Self(rawValue: 84)
    public static let running = Self(rawValue: 85)
    public static let safety = Self(rawValue: 86)
    public static let smoke = Self(rawValue: 87)
    public static let sound = Self(rawValue: 88)
    public static let tamper = Self(rawValue: 89)
    public static let vibration = Self(rawValue: 90)
    public static let window = Self(rawValue: 91)

    /// The published key. Units are in the name so that a consumer never has to guess them.
    public var name: String {
        switch self {
        case .packetID: "packet_id"
        case .batteryPercent: "battery_pct"
        case .temperature: "temperature_c"
        case .humidity: "humidity_pct"
        case .pressure: "pressure_hpa"
        case .illuminance: "illuminance_lx"
        case .massKilograms: "weight_kg"
        case .massPounds: "weight_lb"
        case .dewPoint: "dew_point_c"
        case .count: "count"
        case .energy: "energy_kwh"
        case .power: "power_w"
        case .voltage: "voltage_v"
        case .pm25: "pm25_ugm3"
        case .pm10: "pm10_ugm3"
        case .co2: "co2_ppm"
        case .tvoc: "tvoc_ugm3"
        case .moisture: "moisture_pct"
        case .rotation: "rotation_deg"
        case .distance: "distance_m"
        case .duration: "duration_s"
        case .current: "current_a"
        case .speed: "speed_ms"
        case .uvIndex: "uv_index"
        case .volume: "volume_l"
        case .volumeFlowRate: "volume_flow_rate_m3h"
        case .gas: "gas_m3"
        case .water: "water_l"
        case .timestamp: "timestamp_s"
        case .acceleration: "acceleration_ms2"
        case .gyroscope: "gyroscope_dps"
        case .volumeStorage: "volume_storage_l"
        case .conductivity: "conductivity_uscm"
        case .direction: "direction_deg"
        case .precipitation: "precipitation_mm"
        case .channel: "channel"
        case .rotationalSpeed: "rotational_speed_rpm"
        case .buttonEvent: "button_event"
        case .dimmerEvent: "dimmer_event"
        case .dimmerSteps: "dimmer_steps"
        case .accelerationX: "acceleration_x_ms2"
        case .accelerationY: "acceleration_y_ms2"
        case .accelerationZ: "acceleration_z_ms2"
        case .movementCounter: "movement_counter"
        case .txPower: "tx_power_dbm"
        case .formaldehyde: "formaldehyde_mgm3"
        case .signalStrength: "signal_strength_dbm"
        case .deviceType: "device_type"
        case .firmwareVersion: "firmware_version"
        case .lightLevel: "light_level"
        case .settingsRevision: "settings_revision"
        case .pm1: "pm1_ugm3"
        case .pm4: "pm4_ugm3"
        case .vocIndex: "voc_index"
        case .noxIndex: "nox_index"
        case .soundLevel: "sound_level_dba"
        case .chargeState: "charge_state"
        case .chargerError: "charger_error"
        case .loadCurrent: "load_current_a"
        case .consumedAmpHours: "consumed_ah"
        case .remainingTime: "remaining_time_s"
        case .starterVoltage: "starter_voltage_v"
        case .midpointVoltage: "midpoint_voltage_v"
        case .generic: "generic"
        case .powerOn: "power"
        case .opening: "opening"
        case .batteryLow: "battery_low"
        case .batteryCharging: "battery_charging"
        case .carbonMonoxide: "carbon_monoxide"
        case .cold: "cold"
        case .connectivity: "connectivity"
        case .door: "door"
        case .garageDoor: "garage_door"
        case .gasDetected: "gas_detected"
        case .heat: "heat"
        case .light: "light"
        case .lock: "lock"
        case .moistureDetected: "moisture_detected"
        case .motion: "motion"
        case .moving: "moving"
        case .occupancy: "occupancy"
        case .plug: "plug"
        case .presence: "presence"
        case .problem: "problem"
        case .running: "running"
        case .safety: "safety"
        case .smoke: "smoke"
        case .sound: "sound"
        case .tamper: "tamper"
        case .vibration: "vibration"
        case .window: "window"
        default: "quantity_\(rawValue)"
        }
    }

    public var description: String { name }

    /// Whether the value is a 0/1 state rather than a measurement.
    @inlinable public var isBinary: Bool { rawValue >= 64 && rawValue <= 91 }

    /// The range a real reading can take; outside it a value is flagged, never published as real.
    /// Wide on purpose: it catches corrupted frames and "not available" sentinels, not cold rooms.
    @inlinable public var plausibleRange: ClosedRange<Double>? {
        switch self {
        case .temperature, .dewPoint: -100...150
        case .humidity, .batteryPercent, .moisture: 0...100
        case .pressure: 300...1200
        case .illuminance: 0...200_000
        case .co2: 0...40_000
        default: nil
        }
    }
}
