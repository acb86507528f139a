import Foundation
import Testing

@testable import BLEFleet

/// Room presence as a state machine, fed readings as the gateways' beacon topics carry them, on a clock the test
/// turns: rooms decided from the fit, no flapping at a doorway, away after the timeout, and each kind of bad input.
struct PresenceEngineTests {
    static let site = try! SiteDescription(text: SiteDescriptionTests.office)
    static let tag = "ibeacon-e2c56db5dffb48d2b060d0f5a71096e0-100-1"

    /// Each placed gateway's true distance to (x, y) at tag height, times `scale[gateway]`, plus `noise`.
    static func readings(
        _ site: SiteDescription, at p: (Double, Double), ts: Double, noise: Double = 0,
        scale: [String: Double] = [:]
    ) -> [PresenceEngine.Reading] {
        site.gateways.values.sorted { $0.id < $1.id }.compactMap { g in
            guard let q = g.position else { return nil }
            let d = ((p.0 - q.x) * (p.0 - q.x) + (p.1 - q.y) * (p.1 - q.y) + (1.2 - q.z) * (1.2 - q.z)).squareRoot()
            return .init(
                gateway: g.id, distance: max(0.1, d * (scale[g.id] ?? 1) + noise), accuracy: 0.1 * d + 0.3,
                rssi: -60 - 20 * log10(d), ts: ts)
        }
    }

    /// Runs `seconds` of one reading per gateway per second, then a tick; returns every report.
    static func run(
        _ engine: inout PresenceEngine, from t0: Double, seconds: Int, tag: String = tag,
        at position: (Int) -> (Double, Double)?, noise: (Int) -> Double = { _ in 0 },
        scale: [String: Double] = [:]
    ) -> [PresenceEngine.Report] {
        var out: [PresenceEngine.Report] = []
        for i in 0..<seconds {
            let t = t0 + Double(i)
            if let p = position(i) {
                for r in readings(engine.site, at: p, ts: t, noise: noise(i), scale: scale) {
                    engine.observe(beacon: tag, reading: r, now: t)
                }
            }
            out += engine.tick(now: t)
        }
        return out
    }

    func rooms(_ reports: [PresenceEngine.Report]) -> [String] {
        var seen: [String] = []
        for r in reports where seen.last != (r.room ?? "not_home") { seen.append(r.room ?? "not_home") }
        return seen
    }

    @Test func aTagStandingInTheLabIsInTheLabByTrilaterationWithEveryGatewayListed() throws {
        var e = PresenceEngine(site: Self.site)
        let reports = Self.run(&e, from: 1000, seconds: 30, at: { _ in (21, 3) })
        let last = try #require(reports.last)
        #expect(rooms(reports) == ["lab"])
        #expect(last.method == .trilateration)
        #expect(last.gateways.map(\.gateway).sorted() == ["gw-kitchen", "gw-lab", "gw-lobby"])
        let p = try #require(last.position)
        #expect(hypot(p.x - 21, p.y - 3) < 0.3)
        #expect(last.confidence > 0.9)
        // Nothing changed: reports only at the start and on the heartbeat, not every second.
        #expect(reports.count <= 3)
    }

    @Test func aTagStandingOnADoorwayDoesNotFlap() {
        // On the lobby/corridor line (y = 9), its distances jittering ±0.8 m every second for ten minutes.
        var e = PresenceEngine(site: Self.site)
        let reports = Self.run(
            &e, from: 0, seconds: 600, at: { _ in (4, 9.2) }, noise: { i in i % 2 == 0 ? 0.8 : -0.8 })
        #expect(rooms(reports).count == 1, "rooms: \(rooms(reports))")
    }

    @Test func aTagWalkingFromTheLobbyIntoTheCorridorMovesOnceAfterTheDwell() throws {
        var e = PresenceEngine(site: Self.site)
        // Came into the lobby from the corridor (so it has not settled), 60 s there, a 6 m walk at 1 m/s to the
        // corridor's middle, 60 s there.
        let reports = Self.run(
            &e, from: 0, seconds: 190,
            at: { i in
                i < 30 ? (4, 10.5) : i < 120 ? (4, 4) : i < 126 ? (4, 4 + Double(i - 119)) : (4, 10.5)
            })
        #expect(rooms(reports) == ["corridor", "lobby", "corridor"])
        let moved = try #require(reports.last { $0.room == "corridor" && $0.since > 100 })
        // Left the lobby's edge (y = 9) at t ≈ 125; no sooner than the dwell allows, and within a few seconds.
        #expect(moved.since >= 124 + Self.site.presence.dwellS - 1 && moved.since <= 135, "moved at \(moved.since)")
    }

    @Test func aTagThatWalksDeepIntoTheNextRoomMovesSoonerThanTheDwell() throws {
        var e = PresenceEngine(site: Self.site)
        // Came into the corridor from the lobby, 60 s there, then in the kitchen's middle, 4 m past its wall: a lead
        // eight times the margin.
        let reports = Self.run(
            &e, from: 0, seconds: 150,
            at: { i in
                i < 30 ? (4, 4) : i < 120 ? (10, 10.5) : (10, 16)
            })
        #expect(rooms(reports) == ["lobby", "corridor", "kitchen"])
        let moved = try #require(reports.first { $0.room == "kitchen" })
        #expect(moved.since >= 120 && moved.since < 120 + Self.site.presence.dwellS, "moved at \(moved.since)")
    }

    @Test func aSettledTagIgnoresAnExcursionAcrossTheWallAndLeavesOnlyAfterTheSettledDwell() throws {
        var e = PresenceEngine(site: Self.site)
        let settledDwell = Self.site.presence.settledDwellS
        // Out of the lab (20, 7.5) into the corridor and along it at 1.2 m/s, `s` seconds after setting off.
        func walkOut(_ s: Int) -> (Double, Double) {
            s < 3 ? (20, 7.5 + 1.2 * Double(s + 1)) : (max(2, 20 - 1.2 * Double(s - 2)), 10.5)
        }
        // Three minutes in the lab 1.5 m from the corridor's wall; then its fits look like a walk out for 8 s (less
        // than the settled dwell) and come back; later it really walks out. An unsettled tag would have followed
        // the first within a few seconds (the tests above).
        let reports = Self.run(
            &e, from: 0, seconds: 400,
            at: { i in
                switch i {
                case 180..<188: walkOut(i - 180)
                case 300...: walkOut(i - 300)
                default: (20, 7.5)
                }
            })
        #expect(rooms(reports) == ["lab", "corridor"], "rooms: \(rooms(reports))")
        let moved = try #require(reports.first { $0.room == "corridor" })
        // Through the wall (y = 9) at t ≈ 302, a metre past it about 305.
        #expect(moved.since >= 302 + settledDwell && moved.since <= 308 + settledDwell, "moved at \(moved.since)")
    }

    @Test func aTagThatChangedRoomLatelyIsFollowedWithoutTheQuietFiltersLag() throws {
        // The same walk along the corridor, by a tag that sat in the lab for 100 s (settled) and by one that came
        // out of the lab 30 s before (not): 6 s into the walk, the second's published position is nearer the truth.
        func positionAfterWalking(sittingFor sit: Int, cameFromTheLab: Bool) throws -> (Double, Double) {
            var e = PresenceEngine(site: Self.site)
            let start = cameFromTheLab ? 30 : 0
            let reports = Self.run(
                &e, from: 0, seconds: start + sit + 7,
                at: { i in
                    if i < start { return (20, 5) }
                    let walked = i - start - sit
                    return walked < 0 ? (20, 10.5) : (20 - 1.2 * Double(walked), 10.5)
                })
            let p = try #require(e.report(of: Self.tag)?.position ?? reports.last?.position)
            return (p.x, p.y)
        }
        let settled = try positionAfterWalking(sittingFor: 200, cameFromTheLab: false)
        let following = try positionAfterWalking(sittingFor: 30, cameFromTheLab: true)
        let truth = 20 - 1.2 * 6
        #expect(abs(following.0 - truth) < 1.5, "following at \(following), truth x \(truth)")
        #expect(abs(following.0 - truth) < abs(settled.0 - truth) - 1, "following \(following), settled \(settled)")
    }

    @Test func aTagNoGatewayHearsIsNotHomeAfterTheTimeoutAndBackWhenHeard() throws {
        var e = PresenceEngine(site: Self.site)
        let away = Self.site.presence.awayAfterS
        let reports = Self.run(
            &e, from: 0, seconds: 30 + Int(away) + 20,
            at: { i in
                i < 10 || i >= 10 + Int(away) + 15 ? (5, 15) : nil
            })
        #expect(rooms(reports) == ["kitchen", "not_home", "kitchen"])
        let left = try #require(reports.first { $0.room == nil })
        #expect(left.since >= 9 + away && left.since <= 11 + away, "not_home at \(left.since)")
        #expect(left.gateways.isEmpty && left.position == nil)
    }

    @Test func gatewaysWithoutPositionsGivePresenceByTheNearestOneAndSaySo() throws {
        var site = Self.site
        for id in site.gateways.keys { site.gateways[id]!.position = nil }
        var e = PresenceEngine(site: site)
        for t in 0..<10 {
            let ts = Double(t)
            e.observe(
                beacon: Self.tag, reading: .init(gateway: "gw-lab", distance: 2, accuracy: 0.5, rssi: -65, ts: ts),
                now: ts)
            e.observe(
                beacon: Self.tag, reading: .init(gateway: "gw-lobby", distance: 12, accuracy: 3, rssi: -85, ts: ts),
                now: ts)
            _ = e.tick(now: ts)
        }
        let r = try #require(e.report(of: Self.tag))
        #expect(r.room == "lab")
        #expect(r.method == .nearestGateway)
        #expect(r.position == nil)
        let payload = String(decoding: PresencePayload.encode(r, site: site), as: UTF8.self)
        #expect(payload.contains(#""method":"nearest_gateway""#))
    }

    @Test func aGatewayReportingAtTheWrongScaleKeepsTheLastGoodPositionAtLowerConfidence() throws {
        var e = PresenceEngine(site: Self.site)
        let good = Self.run(&e, from: 0, seconds: 20, at: { _ in (21, 3) })
        let before = try #require(good.last)
        // The lab's gateway now reports in decimetres: with three gateways nothing outvotes it, and the distances
        // agree with no point inside the site.
        let bad = Self.run(&e, from: 20, seconds: 20, at: { _ in (21, 3) }, scale: ["gw-lab": 10])
        let after = try #require(bad.last ?? e.report(of: Self.tag))
        #expect(after.room == "lab")
        #expect(after.method == .lastGoodPosition)
        #expect(after.confidence < before.confidence)
        let p = try #require(after.position)
        #expect(hypot(p.x - 21, p.y - 3) < 0.5, "the last good position moved to \(p)")
        #expect(e.counters.contradictions > 0)
    }

    @Test func readingsFromAGatewayWhoseClockIsAFewSecondsOffStillCount() throws {
        var e = PresenceEngine(site: Self.site)
        for t in 0..<20 {
            let now = 10_000 + Double(t)
            for var r in Self.readings(Self.site, at: (21, 3), ts: now) {
                if r.gateway == "gw-kitchen" { r.ts -= 3 }  // 3 s behind: tolerated
                if r.gateway == "gw-lobby" { r.ts -= 60 }  // a minute behind: left out of the fit
                e.observe(beacon: Self.tag, reading: r, now: now)
            }
            _ = e.tick(now: now)
        }
        let r = try #require(e.report(of: Self.tag))
        #expect(r.gateways.map(\.gateway).sorted() == ["gw-kitchen", "gw-lab"])
        #expect(r.room == "lab")
    }

    @Test func readingsFromGatewaysTheSiteDoesNotPlaceAreCountedAndIgnored() {
        var e = PresenceEngine(site: Self.site)
        e.observe(
            beacon: Self.tag, reading: .init(gateway: "gw-attic", distance: 1, accuracy: 0.3, rssi: -60, ts: 0), now: 0)
        #expect(e.tick(now: 0).isEmpty)
        #expect(e.counters.unplacedReadings == 1)
        #expect(e.unplacedGateways == ["gw-attic"])
    }

    @Test func aNewSiteWithoutAGatewayThatWasHeardIsTakenWithoutTrouble() throws {
        var e = PresenceEngine(site: Self.site)
        _ = Self.run(&e, from: 0, seconds: 5, at: { _ in (21, 3) })
        // gw-lobby leaves the description while its readings are still fresh.
        var smaller = Self.site
        smaller.gateways["gw-lobby"] = nil
        e.replaceSite(smaller)
        _ = e.tick(now: 5)
        let r = try #require(e.report(of: Self.tag))
        #expect(r.room == "lab")
        #expect(!r.gateways.contains { $0.gateway == "gw-lobby" })
    }

    @Test func tagsBeyondTheLimitAreRefusedAndCounted() {
        var site = Self.site
        site.presence.maxTags = 2
        var e = PresenceEngine(site: site)
        for i in 0..<5 {
            for r in Self.readings(site, at: (3, 3), ts: 0) { e.observe(beacon: "tag-\(i)", reading: r, now: 0) }
        }
        #expect(e.tagCount == 2)
        #expect(e.counters.refusedTags == 3 * 3)
    }

    @Test func theRetainedPayloadCarriesRoomSinceConfidenceAndTheGateways() throws {
        var e = PresenceEngine(site: Self.site)
        let r = try #require(Self.run(&e, from: 5, seconds: 5, at: { _ in (10, 17) }).last)
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(PresencePayload.encode(r, site: Self.site))) as? [String: Any])
        #expect(json["room"] as? String == "kitchen")
        #expect(json["room_name"] as? String == "Kitchen")
        #expect(json["floor"] as? String == "ground")
        #expect(json["since"] as? Double == 5)
        #expect(json["method"] as? String == "trilateration")
        #expect((json["position"] as? [String: Any])?["error_m"] is Double)
        let heard = try #require(json["gateways"] as? [[String: Any]])
        #expect(Set(heard.compactMap { $0["gateway"] as? String }) == ["gw-kitchen", "gw-lab", "gw-lobby"])
        #expect(heard.allSatisfy { $0["distance_m"] is Double && $0["rssi"] is Double })
    }
}
