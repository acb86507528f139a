import BLEHCI
import BLETransport
import Foundation
import Yams

/// A point in the scenario's frame, in metres.
public struct Vec3: Sendable, Hashable {
    public var x, y, z: Double
    public init(_ x: Double, _ y: Double, _ z: Double = 0) { (self.x, self.y, self.z) = (x, y, z) }
    public func distance(to o: Vec3) -> Double {
        let (dx, dy, dz) = (x - o.x, y - o.y, z - o.z)
        return (dx * dx + dy * dy + dz * dz).squareRoot()
    }
}

/// Where an emitter is at a given virtual time: fixed, or walking waypoints at a speed.
public struct Motion: Sendable {
    struct Leg: Sendable {
        var from: Vec3
        var to: Vec3
        var start: Double
        var travel: Double
        var pause: Double
    }
    let fixed: Vec3?
    let legs: [Leg]
    let cycle: Double
    let loop: Bool

    public static func fixed(_ p: Vec3) -> Motion { Motion(fixed: p, legs: [], cycle: 0, loop: false) }

    /// Walks `waypoints` in order at `speed` m/s, pausing `pause` s at each; when `loop`, walks
    /// back to the first and starts again, otherwise stays at the last.
    public static func path(_ waypoints: [Vec3], speed: Double, pause: Double, loop: Bool) -> Motion {
        precondition(waypoints.count >= 1 && speed > 0)
        var pts = waypoints
        if loop && pts.count > 1 { pts.append(pts[0]) }
        var legs: [Leg] = []
        var t = 0.0
        for i in 0..<(pts.count - 1) {
            let travel = pts[i].distance(to: pts[i + 1]) / speed
            legs.append(Leg(from: pts[i], to: pts[i + 1], start: t, travel: travel, pause: pause))
            t += travel + pause
        }
        if legs.isEmpty { return .fixed(pts[0]) }
        return Motion(fixed: nil, legs: legs, cycle: t, loop: loop)
    }

    public func position(at t: Double) -> Vec3 {
        if let fixed { return fixed }
        var u = max(0, t)
        if loop, cycle > 0 { u = u.truncatingRemainder(dividingBy: cycle) } else if u >= cycle { return legs.last!.to }
        // Few legs per walker: a linear search is cheaper than bookkeeping.
        var leg = legs[0]
        for l in legs where l.start <= u { leg = l }
        let into = u - leg.start
        if into >= leg.travel || leg.travel == 0 { return leg.to }
        let f = into / leg.travel
        return Vec3(
            leg.from.x + (leg.to.x - leg.from.x) * f, leg.from.y + (leg.to.y - leg.from.y) * f,
            leg.from.z + (leg.to.z - leg.from.z) * f)
    }
}

/// A gateway's radio: where it stands, its controller's address, how deaf or keen its receiver is.
public struct GatewaySpec: Sendable {
    public var id: String
    public var position: Vec3
    public var address: BDAddress
    /// Added to every RSSI this receiver measures (antenna gain, enclosure, calibration error).
    public var rxOffsetDB: Double
    /// Links the controller holds at once (`max_connections`, default 4).
    public var maxConnections: Int
    /// This gateway's own `gateway_config:`, verbatim: merged over the scenario's, key by key (mappings merge,
    /// anything else replaces), into the configuration this gateway runs with.
    public var gatewayConfigOverlayYAML: String?

    public init(id: String, position: Vec3, address: BDAddress, rxOffsetDB: Double = 0, maxConnections: Int = 4) {
        (self.id, self.position, self.address, self.rxOffsetDB) = (id, position, address, rxOffsetDB)
        self.maxConnections = maxConnections
    }
}

/// Something that advertises: a fixed beacon, a tag carried by a walker, or a sensor peripheral.
public struct EmitterSpec: Sendable {
    public enum Role: String, Sendable { case beacon, tag, peripheral, phone }
    public var name: String
    public var role: Role
    public var frame: BeaconFrame
    public var address: BDAddress
    /// 0x00 public, 0x01 random (beacons use random static addresses).
    public var addressType: UInt8
    public var motion: Motion
    /// advInterval in seconds (Core v5.4, Vol 6, Part B, §4.4.2.2: 20 ms to 10.24 s).
    public var interval: Double
    /// Mean RSSI at 1 m, the path-loss model's reference.
    public var rssiAt1m: Double
    /// Scan response data, sent to active scanners of scannable/connectable PDUs.
    public var scanResponse: [UInt8]?
    /// Peripherals only: how the device behaves once connected.
    public var link = PeripheralLinkSpec()
    /// Phones only: the IRK its addresses rotate under and how it pairs; `address` is its identity address.
    public var phone: PhoneSpec?

    public init(
        name: String, role: Role, frame: BeaconFrame, address: BDAddress, addressType: UInt8, motion: Motion,
        interval: Double, rssiAt1m: Double, scanResponse: [UInt8]?
    ) {
        self.name = name
        self.role = role
        self.frame = frame
        self.address = address
        self.addressType = addressType
        self.motion = motion
        self.interval = interval
        self.rssiAt1m = rssiAt1m
        self.scanResponse = scanResponse
    }

    public var beaconID: String { frame.beaconID(address: address) }
}

/// The log-distance path-loss channel (Rappaport, "Wireless Communications", §4.9):
/// RSSI = RSSI@1m − 10·n·log10(d) + X_σ + link offset + receiver offset, X_σ ~ N(0, σ²) per reception.
public struct RadioModel: Sendable {
    public var pathLossExponent = 2.0
    public var shadowingSigmaDB = 4.0
    /// Probability that one advertising PDU is not received (collisions, fading), per reception.
    public var lossProbability = 0.05
    /// Receptions weaker than this are lost.
    public var sensitivityDBm = -100.0
    /// Fixed extra loss (negative) or gain per (gateway id, emitter name): a wall, a metal shelf.
    public var linkOffsets: [String: [String: Double]] = [:]

    public init() {}

    /// Mean RSSI at distance `d` (closer than 10 cm is treated as 10 cm).
    @inlinable public func meanRSSI(rssiAt1m: Double, distance d: Double) -> Double {
        rssiAt1m - 10 * pathLossExponent * log10(max(d, 0.1))
    }
}

/// A fault on the timeline.
public struct FaultSpec: Sendable {
    public enum Kind: String, Sendable, CaseIterable {
        /// The adapter loses power: it stops answering commands and stops reporting; power returns reset.
        case powerOff = "power_off"
        /// The controller sends HCI_Hardware_Error, then behaves as `power_off` for the duration.
        case hardwareError = "hardware_error"
        /// The transport goes away (USB unplug): the socket is closed and removed; re-plugged after the duration.
        case unplug
        /// The radio goes deaf: commands are answered, scanning looks enabled, no reports arrive.
        case silence
        /// Links cannot be made: LE (Extended) Create Connection is accepted (Command Status 0x00),
        /// the peer's ADV_IND is answered, but the first connection events fail and six connection
        /// intervals later LE (Enhanced) Connection Complete reports 0x3E (Vol 4, Part E, §7.7.65.1).
        case connectionFailure = "connection_failure"
        /// The controller keeps the host's ACL packets in its LE buffers and returns no credits
        /// (no Number Of Completed Packets); packets beyond the 8 buffers are dropped and counted.
        /// At the end the held packets go out and each handle's credits come back in one event.
        case bufferExhaustion = "buffer_exhaustion"
        /// A peer stops answering ATT requests (no response, no error) while its link stays up and
        /// its notifications go on: the host's 30 s ATT transaction timeout (Vol 3, Part F, §3.3.3)
        /// is what notices. With `peripheral:` only that peer's links; otherwise every link of the gateway.
        case gattSilence = "gatt_silence"
        /// A peripheral loses power (battery pulled, reboot): it stops advertising and answering, so every link
        /// to it ends in a supervision timeout (Disconnection Complete 0x08); at the end it advertises again.
        /// Needs `peripheral:`; its `gateway` is only where the fault is logged in the truth file.
        case peripheralOff = "peripheral_off"
        /// The controller refuses every command with an error status (`status`, default 0x03 Hardware Failure), in
        /// the event that answers that command (Command Complete or Command Status), and does none of them.
        case commandErrors = "command_errors"
        /// A BR/EDR-only controller: LE commands (OGF 0x08) are Unknown HCI Command (0x01), and Read Local
        /// Supported Features / Commands show no LE (Vol 2, Part C, §3.3 bit 38 "LE Supported (Controller)" clear).
        /// Starting or ending, the controller comes up from power-on defaults, as a swapped dongle would.
        case leUnsupported = "le_unsupported"
    }
    public var at: Double
    public var gateway: String
    public var kind: Kind
    /// nil: until the end of the run.
    public var duration: Double?
    public var hardwareCode: UInt8 = 0x00
    /// `command_errors` only: the HCI status every command is refused with (Vol 1, Part F, §1.3).
    public var status: UInt8 = 0x03
    /// `gatt_silence` only: the peripheral (by name) that goes silent; nil: all of the gateway's peers.
    public var peripheral: String?

    public init(at: Double, gateway: String, kind: Kind, duration: Double?, hardwareCode: UInt8 = 0) {
        (self.at, self.gateway, self.kind, self.duration, self.hardwareCode) = (
            at, gateway, kind, duration, hardwareCode
        )
    }
}

/// A whole virtual world, as loaded from a scenario file.
public struct Scenario: Sendable {
    public var name: String
    public var duration: Double?
    public var radio = RadioModel()
    public var gateways: [GatewaySpec] = []
    public var emitters: [EmitterSpec] = []
    public var faults: [FaultSpec] = []
    /// Seconds of virtual time between ground-truth samples.
    public var truthInterval = 1.0
    /// The `gateway_config:` section, verbatim, for the gateways run against this scenario.
    public var gatewayConfigYAML: String?
    /// Each gateway's configuration: the scenario's `gateway_config:` with the gateway's own merged over it
    /// (nil when neither has one). Written by the loader.
    public var gatewayConfigYAMLByGateway: [String: String] = [:]
    /// The `site:` section with the gateways placed (their positions and `room`s), for the fleet service's
    /// presence; nil without one. Written by the loader.
    public var siteYAML: String?

    public init(name: String) { self.name = name }
}
