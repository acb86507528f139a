/// The presence page's view: each site's floor plan (rooms, placed gateways) and its tags, as the engine has them.
extension FleetViews {
    public struct PresenceRoom: Sendable, Encodable {
        public var id: String
        public var name: String
        public var floor: String
        public var polygon: [[Double]]
    }

    public struct PresenceGateway: Sendable, Encodable {
        public var id: String
        public var room: String
        public var x: Double?
        public var y: Double?
        public var z: Double?
    }

    public struct PresenceTag: Sendable, Encodable {
        public var beacon: String
        public var name: String?
        /// The room's id, or `not_home`.
        public var room: String
        public var since: Double
        public var confidence: Double
        public var method: String
        public var x: Double?
        public var y: Double?
        public var floor: String?
        public var errorM: Double?
        public var gateways: [String]
    }

    public struct PresenceSite: Sendable, Encodable {
        public var prefix: String
        public var source: FleetPresence.Source
        /// The newest pushed description that was refused, and why (the one in force stays).
        public var refused: String?
        public var floors: [String]
        public var rooms: [PresenceRoom]
        public var gateways: [PresenceGateway]
        public var tags: [PresenceTag]
        public var readings: Int
        public var unplacedGateways: [String]
        public var contradictions: Int
        public var refusedTags: Int
    }

    public struct PresencePage: Sendable, Encodable {
        public var now: Double
        public var broker: BrokerState
        public var sites: [PresenceSite]
        /// Sites followed that have no description yet.
        public var withoutSite: [String]
        public var notPublished: Int
    }

    public static func presence(_ p: FleetPresence, model m: FleetModel, broker: BrokerState, now: Double)
        -> PresencePage
    {
        func name(_ beacon: String) -> String? {
            for g in m.gateways.values { if let n = g.beacons[beacon]?.name { return n } }
            return nil
        }
        let sites = p.sites.keys.sorted().map { prefix -> PresenceSite in
            let s = p.sites[prefix]!
            let site = s.engine.site
            return PresenceSite(
                prefix: prefix, source: s.source, refused: s.refused, floors: site.floors.map(\.id),
                rooms: site.rooms.map {
                    PresenceRoom(id: $0.id, name: $0.name, floor: $0.floor, polygon: $0.polygon.map { [$0.x, $0.y] })
                },
                gateways: site.gateways.values.sorted { $0.id < $1.id }.map {
                    PresenceGateway(id: $0.id, room: $0.room, x: $0.position?.x, y: $0.position?.y, z: $0.position?.z)
                },
                tags: s.engine.reports.map { r in
                    PresenceTag(
                        beacon: r.beacon, name: name(r.beacon), room: r.room ?? PresencePayload.notHome, since: r.since,
                        confidence: r.confidence, method: r.method.rawValue, x: r.position?.x, y: r.position?.y,
                        floor: r.position?.floor, errorM: r.position?.error, gateways: r.gateways.map(\.gateway))
                },
                readings: s.engine.counters.readings, unplacedGateways: s.engine.unplacedGateways.sorted(),
                contradictions: s.engine.counters.contradictions, refusedTags: s.engine.counters.refusedTags)
        }
        return PresencePage(
            now: now, broker: broker, sites: sites,
            withoutSite: m.sites.filter { p.sites[$0] == nil }, notPublished: p.notPublished)
    }
}
