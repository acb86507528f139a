import BLETransport

/// The one enrolment a running gateway carries out at a time (`…/enrol`), and the operator's answer to its
/// comparison: the phase is idle, or running with its id, its task and, while the six digits are shown, the wait
/// for `confirm`.
final class EnrolmentDesk: Sendable {
    enum Phase {
        case idle
        case running(id: String?, task: Task<Void, Never>, waiting: CheckedContinuation<Bool, Never>?)
    }

    private let phase = Locked(Phase.idle)

    /// The id of the enrolment running, if one is (`.some(nil)` for one started without an id).
    var running: String?? {
        phase.withLock {
            if case .running(let id, _, _) = $0 { return .some(id) }
            return nil
        }
    }

    /// Starts `work` as the enrolment `id`, unless one is running (false). The desk is idle again when it ends.
    func start(id: String?, _ work: @escaping @Sendable () async -> Void) -> Bool {
        phase.withLock { p in
            guard case .idle = p else { return false }
            let task = Task { [self] in
                await work()
                phase.withLock { $0 = .idle }
            }
            p = .running(id: id, task: task, waiting: nil)
            return true
        }
    }

    /// Waits for the operator's answer to the comparison now shown; cancellation (a timeout, `cancel`, shutdown)
    /// answers no.
    func answer() async -> Bool {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
                let refused: Bool = phase.withLock { p in
                    guard case .running(let id, let task, _) = p, !Task.isCancelled else { return true }
                    p = .running(id: id, task: task, waiting: c)
                    return false
                }
                if refused { c.resume(returning: false) }
            }
        } onCancel: {
            take()?.resume(returning: false)
        }
    }

    /// The operator answered for `id`: false when no comparison of that enrolment is waiting.
    func confirm(id: String?, _ yes: Bool) -> Bool {
        let waiting: CheckedContinuation<Bool, Never>? = phase.withLock { p in
            guard case .running(let running, let task, let w?) = p, running == id else { return nil }
            p = .running(id: running, task: task, waiting: nil)
            return w
        }
        waiting?.resume(returning: yes)
        return waiting != nil
    }

    /// Cancels the enrolment `id`: false when it is not the one running.
    func cancel(id: String?) -> Bool {
        let task: Task<Void, Never>? = phase.withLock { p in
            guard case .running(let running, let task, _) = p, running == id else { return nil }
            return task
        }
        task?.cancel()
        return task != nil
    }

    /// Shutdown: cancels whatever runs and waits for it to undo its advertising and its link.
    func stop() async {
        let task: Task<Void, Never>? = phase.withLock { p in
            if case .running(_, let task, _) = p { return task }
            return nil
        }
        task?.cancel()
        await task?.value
    }

    private func take() -> CheckedContinuation<Bool, Never>? {
        phase.withLock { p in
            guard case .running(let id, let task, let w?) = p else { return nil }
            p = .running(id: id, task: task, waiting: nil)
            return w
        }
    }
}
