import ArgumentParser
import BLEFleet
import BLEPublishing
import Foundation

/// `blegateway site`: check a site description, or push it retained to `<prefix>/fleet/site` for the fleet service's
/// room presence (docs/PRESENCE.md).
struct SiteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "site",
        abstract: "Check or publish the site description (floors, rooms, gateway positions) used for room presence.",
        subcommands: [Check.self, Push.self])

    static func read(_ file: String) throws -> (SiteDescription, [UInt8]) {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw ValidationError("cannot read \(file)")
        }
        do {
            return (try SiteDescription(text: String(decoding: data, as: UTF8.self), path: file), Array(data))
        } catch {
            throw ValidationError("\(error)")
        }
    }

    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Validate a site description; errors name the key.")

        @Argument(help: "The site description (YAML or JSON).")
        var file: String

        func run() async throws {
            let (site, _) = try SiteCommand.read(file)
            let unplaced = site.gateways.values.filter { $0.position == nil }.map(\.id).sorted()
            print(
                "\(file): \(site.floors.count) floor(s), \(site.rooms.count) room(s), \(site.gateways.count) gateway(s)"
                    + (unplaced.isEmpty
                        ? ""
                        : "; without a position (presence by nearest gateway): \(unplaced.joined(separator: ", "))"))
        }
    }

    struct Push: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Publish a site description retained on <prefix>/fleet/site (checked first; --delete removes it)."
        )

        @OptionGroup var options: RemoteConfigBrokerOptions

        @Flag(help: "Remove the retained description (the fleet service falls back to its configured one).")
        var delete = false

        @Argument(help: "The site description (YAML or JSON).")
        var file: String?

        func validate() throws {
            guard (file != nil) != delete else { throw ValidationError("give a FILE, or --delete") }
        }

        func run() async throws {
            let payload = try file.map { try SiteCommand.read($0).1 } ?? []
            let topic = FleetPresence.siteTopic(options.prefix)
            let client = try options.client("site")
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await client.run() }
                guard try await firstConnection(client, within: .seconds(10)) else {
                    group.cancelAll()
                    throw ValidationError(
                        "cannot reach the broker at \(options.broker) within 10 s; nothing was published")
                }
                try await client.publish(MQTTMessage(topic: topic, payload: payload, qos: .atLeastOnce, retain: true))
                print(
                    payload.isEmpty
                        ? "deleted the retained site description on \(topic)"
                        : "published \(payload.count) bytes to \(topic)")
                group.cancelAll()
            }
        }
    }
}
