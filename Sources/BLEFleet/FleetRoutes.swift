import Foundation
import Hummingbird

/// The dashboard's HTTP surface. Pages are static (no build step, nothing fetched from the internet); they load
/// their data as JSON and stay live over Server-Sent Events. Every string in the JSON may come from a payload:
/// the pages only ever insert it as text (`textContent`), never as markup.
enum FleetRoutes {
    /// A page's event stream waits this long after each event, so a burst of messages becomes one event.
    static let eventSpacing = Duration.milliseconds(250)

    static func router(_ service: FleetService) -> Router<BasicRequestContext> {
        let router = Router()
        router.get("/") { _, _ in page(FleetPages.overview) }
        router.get("gateway/:id") { _, _ in page(FleetPages.gateway) }
        router.get("beacon/:id") { _, _ in page(FleetPages.beacon) }
        router.get("sensor/:id") { _, _ in page(FleetPages.sensor) }
        router.get("presence") { _, _ in page(FleetPages.presence) }
        router.get("static/fleet.js") { _, _ in text(FleetPages.script, type: "text/javascript; charset=utf-8") }
        router.get("static/presence.js") { _, _ in
            text(FleetPages.presenceScript, type: "text/javascript; charset=utf-8")
        }
        router.get("static/fleet.css") { _, _ in text(FleetPages.style, type: "text/css; charset=utf-8") }

        router.get("api/overview") { _, _ in try json(service.overview()) }
        router.get("api/gateway/:id") { _, ctx in try json(service.gatewayPage(try ctx.parameters.require("id"))) }
        router.get("api/beacon/:id") { _, ctx in try json(service.beaconPage(try ctx.parameters.require("id"))) }
        router.get("api/sensor/:id") { _, ctx in try json(service.sensorPage(try ctx.parameters.require("id"))) }
        router.get("api/presence") { _, _ in try json(service.presencePage()) }
        router.get("api/history/gateway/:id") { req, ctx in
            let since =
                service.clock.unixTime() - hours(
                    req, retentionS: service.history?.retentionS ?? FleetHistory.defaultRetentionS) * 3600
            return try json(try service.history?.health(gateway: try ctx.parameters.require("id"), since: since) ?? [])
        }
        router.get("api/history/beacon/:id") { req, ctx in
            let since =
                service.clock.unixTime() - hours(
                    req, retentionS: service.history?.retentionS ?? FleetHistory.defaultRetentionS) * 3600
            return try json(try service.history?.ranging(beacon: try ctx.parameters.require("id"), since: since) ?? [:])
        }

        router.get("api/history/sensor/:id") { req, ctx in
            let since =
                service.clock.unixTime() - hours(
                    req, retentionS: service.history?.retentionS ?? FleetHistory.defaultRetentionS) * 3600
            return try json(try service.history?.sensor(try ctx.parameters.require("id"), since: since) ?? [:])
        }

        router.get("events/overview") { _, _ in events(service) { service.overview() } }
        router.get("events/presence") { _, _ in events(service) { service.presencePage() } }
        router.get("events/sensor/:id") { _, ctx in
            let id = try ctx.parameters.require("id")
            return events(service) { service.sensorPage(id) }
        }
        router.get("events/gateway/:id") { _, ctx in
            let id = try ctx.parameters.require("id")
            return events(service) { service.gatewayPage(id) }
        }
        router.get("events/beacon/:id") { _, ctx in
            let id = try ctx.parameters.require("id")
            return events(service) { service.beaconPage(id) }
        }

        router.get("metrics") { _, _ in text(service.metrics(), type: PrometheusExposition.contentType) }
        return router
    }

    /// `?hours=` for the history, 1 by default, at most the retention.
    static func hours(_ request: Request, retentionS: Double) -> Double {
        let asked = request.uri.queryParameters.get("hours").flatMap { Double(String($0)) } ?? 1
        return min(max(asked.isFinite ? asked : 1, 0), retentionS / 3600)
    }

    static func page(_ html: String) -> Response { text(html, type: "text/html; charset=utf-8") }

    static func text(_ s: String, type: String) -> Response {
        Response(
            status: .ok, headers: [.contentType: type, .cacheControl: "no-cache"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: s)))
    }

    static func json(_ value: some Encodable) throws -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-cache"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: try JSONEncoder().encode(value))))
    }

    /// `text/event-stream` (https://html.spec.whatwg.org/multipage/server-sent-events.html): the view now, then
    /// after every change, until the client goes or the service stops.
    static func events<V: Encodable & Sendable>(_ service: FleetService, _ view: @escaping @Sendable () -> V)
        -> Response
    {
        let changes = service.changes.listen()
        let clock = service.clock
        return Response(
            status: .ok,
            headers: [.contentType: "text/event-stream", .cacheControl: "no-cache"],
            body: ResponseBody { writer in
                let encoder = JSONEncoder()
                for await _ in changes {
                    var buffer = ByteBuffer(string: "data: ")
                    buffer.writeBytes(try encoder.encode(view()))
                    buffer.writeString("\n\n")
                    try await writer.write(buffer)
                    try await clock.sleep(for: eventSpacing)
                }
                try await writer.finish(nil)
            })
    }
}
