/// Runs `body` for each element of `sequence`, at most `limit` at once, and returns when the sequence has ended and
/// every call has finished. The next element is taken only when a call finishes, so what waits stays in the
/// sequence's own buffer (bounded, its overflow counted by whoever feeds it) instead of becoming one more task.
public func forEachConcurrently<S: AsyncSequence>(
    _ sequence: S, atMost limit: Int, isolation: isolated (any Actor)? = #isolation,
    _ body: @escaping @Sendable (S.Element) async -> Void
) async throws where S.Element: Sendable {
    precondition(limit >= 1, "at least one at a time")
    try await withThrowingTaskGroup(of: Void.self) { group in
        var running = 0
        for try await element in sequence {
            if running >= limit {
                try await group.next()
                running -= 1
            }
            group.addTask { await body(element) }
            running += 1
        }
    }
}
