import Foundation

/// Waits, in real time and without asserting on how long, until `condition` holds; false if it still does not after
/// about five seconds. For what a test cannot be told by an event (another thread's counter, a file's contents);
/// where something announces itself, wait on that instead.
public func eventually(_ condition: () -> Bool) async -> Bool {
    for _ in 0..<5_000 {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return condition()
}

/// A wait that `waitUntil` gave up on: what was awaited, and for how long.
public struct WaitTimedOut: Error, CustomStringConvertible {
    public var what: String
    public var limit: Duration
    public var description: String { "timed out after \(limit) waiting for \(what)" }
}

/// The tests' one bounded wait for a condition another task or thread makes true (a broker's delivery, a gateway's
/// spool): checks it every `every` of real time and throws `WaitTimedOut` after `limit`, which is a guard against
/// hanging, not a timing assertion. Where something announces itself (a stream, a signal), wait on that instead.
public func waitUntil(
    _ what: String, limit: Duration = .seconds(10), every: Duration = .milliseconds(10),
    _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + limit
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw WaitTimedOut(what: what, limit: limit) }
        try await Task.sleep(for: every)
    }
}
