import BLEDomain
import BLEHCI
import BLEHost
import BLETransport

/// The supervisor's scanner: started with the parameters in force, restarted on `updateScan`, its reports delivered
/// to the last one, and the lifecycle told that reports flow.
extension AdapterSupervisor {
    /// Starts the scanner task: a scanner with the parameters in force; `scanEnabled` once its enable commands were
    /// answered (its `enables` counter moved) when `announce`. On `updateScan` the task stops that scanner and
    /// starts the next with the new parameters; a failed enable of the new one is a failed re-enable, as for any
    /// scanner.
    func startScanner(
        _ session: Session, info: ControllerInfo, announce: Bool,
        sighting: @escaping @Sendable (Sighting) -> Void
    ) {
        session.scannerTask = Task {
            var first = announce
            while !Task.isCancelled {
                // A stream per scanner (a cancelled iteration ends an AsyncStream for good), in place before the
                // parameters are read, so a change made meanwhile is either read now or asks for the next restart.
                let (restarts, restart) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
                self.shared.withLock { $0.restart = restart }
                defer { restart.finish() }
                let scanner = Scanner(
                    controller: session.controller, mode: .control(info), parameters: self.parameters,
                    logger: self.logger)
                self.shared.withLock { _ in session.scanner = scanner }
                let again = await self.runScanner(scanner, restarts: restarts, announce: first, sighting: sighting)
                // Its own counts now, and out of the live view in the same step, so none is counted twice.
                self.shared.withLock { s in
                    s.tally.ended(scanner)
                    if session.scanner === scanner { session.scanner = nil }
                }
                guard again else { break }
                first = false
                self.logger.info("adapter \(self.spec): scanning again with new parameters (\(self.parameters))")
            }
        }
    }

    /// One scanner until it ends, or until a restart is asked for (true). `announce`: post `scanEnabled` (the first
    /// scanner of a start or recovery step; a parameter change is no recovery).
    func runScanner(
        _ scanner: Scanner, restarts: AsyncStream<Void>, announce: Bool,
        sighting: @escaping @Sendable (Sighting) -> Void
    ) async -> Bool {
        enum Ended { case scanner, enabled, reports, restart, listenerEnded }
        // The scanner runs in a task of its own so a restart can stop it alone: cancelled, it disables scanning and
        // finishes its reports, which the reports child still delivers — nothing received is dropped.
        let running = Task {
            do { try await scanner.run() } catch let e as HCIError {
                if e.code != .transportClosed, e.code != .timedOut {
                    self.post(.stepFailed(.reenableScan, reason: e.description))
                }
            } catch {}
        }
        return await withTaskCancellationHandler {
            await withTaskGroup(of: Ended.self) { group in
                group.addTask {
                    await running.value
                    return .scanner
                }
                group.addTask {
                    for await _ in scanner.enabled {
                        if announce, !Task.isCancelled { self.post(.scanEnabled) }
                        break
                    }
                    return .enabled
                }
                group.addTask {
                    await self.deliver(scanner, to: sighting)
                    return .reports
                }
                group.addTask {
                    for await _ in restarts { return .restart }
                    return .listenerEnded
                }
                var restart = false
                var pending: Set<Ended> = [.scanner, .enabled, .reports]
                while let ended = await group.next() {
                    pending.remove(ended)
                    if ended == .restart {
                        restart = true
                        running.cancel()
                    }
                    // Once the scanner and its reports are done, the other children have nothing left to wait for.
                    if !pending.contains(.scanner), !pending.contains(.reports) { group.cancelAll() }
                }
                return restart && !Task.isCancelled
            }
        } onCancel: {
            running.cancel()
        }
    }

    func stopScanner(_ session: Session) async {
        let task = session.scannerTask
        session.scannerTask = nil
        task?.cancel()
        await task?.value
        shared.withLock { _ in session.scanner = nil }
    }

    /// Every report of `scanner` to the sighting sink, until it has finished them; the machine hears that they flow.
    func deliver(_ scanner: Scanner, to sighting: @Sendable (Sighting) -> Void) async {
        do {
            for try await r in scanner.reports {
                sighting(Sighting(scanReport: r))
                noteReport()
            }
        } catch {}
    }

    /// The machine needs to know reports flow, not each one: at most one event a second.
    func noteReport() {
        let now = clock.now()
        let due = shared.withLock { s -> Bool in
            guard s.lastReportForwarded.map({ now - $0 >= .seconds(1) }) ?? true else { return false }
            s.lastReportForwarded = now
            return true
        }
        if due { post(.reportReceived) }
    }
}
