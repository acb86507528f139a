/// Which of the two retained documents a remote configuration came from (docs/CONFIG.md, "Remote configuration"):
/// the fleet's, under `<prefix>/fleet/config`, or this gateway's own, which is applied over it.
public struct RemoteConfigLayer: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let fleet = RemoteConfigLayer(rawValue: "fleet")
    public static let gateway = RemoteConfigLayer(rawValue: "gateway")
    public var description: String { rawValue }
}
