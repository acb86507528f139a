/// The runtime's long-lived parts, each one task around one `run()`, kept in the order they started so that
/// shutdown is that order reversed: what started last (the scan) stops first, what started first (the remote
/// configuration's followers) stops last, after the broker connection it listens on. Stopping a part cancels its
/// task and waits for it to end; nothing is left running behind the runtime's `run()`.
struct RunningParts {
    private var parts: [(name: String, task: Task<Void, Never>)] = []

    /// Records a started part under `name` (a name may hold several tasks, e.g. one per subscription).
    mutating func started(_ name: String, _ task: Task<Void, Never>?) {
        if let task { parts.append((name, task)) }
    }

    /// Stops, newest first, every part started after `name` and then `name` itself; the older ones keep running.
    mutating func stop(through name: String) async {
        guard let first = parts.firstIndex(where: { $0.name == name }) else { return }
        while parts.count > first {
            let part = parts.removeLast()
            part.task.cancel()
            await part.task.value
        }
    }

    /// Stops every part still running, newest first.
    mutating func stopAll() async {
        while let part = parts.popLast() {
            part.task.cancel()
            await part.task.value
        }
    }
}
