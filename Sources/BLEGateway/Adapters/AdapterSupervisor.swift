import BLEDomain
import BLEHCI
import BLEHost
import BLETransport
import Logging

/// Carries out `AdapterLifecycle`'s actions on a real transport: opens the transport, brings the controller up,
/// scans, and runs the recovery ladder's steps; hands every outcome and every fault (Hardware Error, unanswered
/// command, end of transport, silence) back to the machine.
///
/// Exclusive mode owns the controller. Shared mode is a listen-only session of the same life: the kernel owns the
/// controller and scans for us (`KernelSharedTransport`), so there is no bring-up and no step but opening the
/// session again, and the adapter's power is its owner's business: the kernel's index events say when it goes down,
/// comes up or goes away (`followIndexes`), and the adapter topic says so.
///
/// One `run()`; every operation is a child task of it, and a session (transport, controller, scanner) is torn down
/// before the next is opened, so one transport is open at a time.
final class AdapterSupervisor: @unchecked Sendable {
    typealias L = AdapterLifecycle

    let spec: DeviceSpec
    let mode: AdapterMode
    let options: TransportOptions
    let clock: any BLEClock
    let logger: Logger
    let configuration: L.Configuration
    let role: (any ControllerRole)?
    /// Held while a session's scanner or role is started or stopped: a recovery step and a duty change take turns.
    private let gate = AsyncGate()
    /// What the supervisor's tasks share (`Shared`), under one lock.
    let shared: Locked<Shared>

    /// Everything the supervisor's tasks share. One lock for all of it: a change is made and read in one step (the
    /// live session and the counts it adds, the duties and the session they apply to), and no path takes two locks.
    struct Shared: Sendable {
        /// What this adapter carries: both duties alone; with two adapters, what `AdapterRoles` gives it (`assign`).
        var duties: AdapterRoles.Duties
        /// The scan parameters for the next scanner; `updateScan` changes them while running.
        var parameters: ScanParameters
        /// The sighting sink of the running `run`, for scanners started by a duty change.
        var sighting: (@Sendable (Sighting) -> Void)?
        /// Whether the lifecycle last published poweredOn.
        var usable = false
        /// When the latest open or ladder step began.
        var operationBegan: Duration?
        /// Asks the running scanner task to stop its scanner and start one with `parameters`.
        var restart: AsyncStream<Void>.Continuation?
        /// The open session, if any.
        var session: Session?
        var statistics = L.Statistics()
        var deadline: Duration?
        var tally = Tally()
        /// When the machine last heard that reports flow (`noteReport`).
        var lastReportForwarded: Duration?
        /// /dev/rfkill, for a kernel adapter when it can be opened; the last rfkill index seen for our adapter.
        var rfkill: RfkillDevice?
        var rfkillIndex: UInt32?
        /// The kernel adapter last resolved for opening (bound by address it may differ from the spec's; see
        /// AdapterSupervisor+KernelAdapter.swift).
        var boundAdapter: String?
    }

    /// One open transport and what runs on it.
    final class Session: @unchecked Sendable {
        let transport: any HCITransport
        let controller: HCIController
        var info: ControllerInfo?
        /// The running scanner, counted live by `counters`: set and cleared under `shared`'s lock, which `counters`
        /// reads it under.
        var scanner: Scanner?
        var scannerTask: Task<Void, Never>?
        /// The controller role (peripheral links) on this controller, from bring-up to the session's end or a reset.
        var roleTask: Task<Void, Never>?
        var tasks: [Task<Void, Never>] = []
        init(transport: any HCITransport, controller: HCIController) {
            self.transport = transport
            self.controller = controller
        }
    }

    /// What ended sessions and scanners counted, and the scanners of torn-down sessions still winding down: those are
    /// counted live until they end, so a session's reports never drop out of view between its tear-down and the end
    /// of its scanner's task (the health topic showed totals that went down and up again).
    struct Tally {
        var counters = SightingSourceCounters()
        var ending: [Scanner] = []

        /// A scanner's task ended: its counts move into the totals, out of the live view, in one step.
        mutating func ended(_ scanner: Scanner) {
            counters.add(scanner: scanner)
            ending.removeAll { $0 === scanner }
        }
    }
    private let inbox: AsyncStream<L.Event>
    private let inboxContinuation: AsyncStream<L.Event>.Continuation

    init(
        spec: DeviceSpec, mode: AdapterMode, options: TransportOptions, parameters: ScanParameters,
        clock: any BLEClock, logger: Logger, configuration: L.Configuration, role: (any ControllerRole)? = nil,
        duties: AdapterRoles.Duties = .both
    ) {
        self.role = role
        self.shared = Locked(Shared(duties: duties, parameters: parameters))
        self.spec = spec
        self.mode = mode
        self.options = options
        self.clock = clock
        self.logger = logger
        self.configuration = configuration
        (inbox, inboxContinuation) = AsyncStream.makeStream(of: L.Event.self)
    }

    var statistics: L.Statistics { shared.withLock { $0.statistics } }
    /// The machine's next deadline as of its last event (the service watchdog's judge reads it).
    var deadline: Duration? { shared.withLock { $0.deadline } }

    /// For the service watchdog's judge: the reports, steps and silences so far, and the deadline ahead.
    var progress: LadderProgress {
        let (statistics, deadline) = shared.withLock { ($0.statistics, $0.deadline) }
        return LadderProgress(
            activity: counters.reports + statistics.attempts.values.reduce(0, +) + statistics.silences,
            deadline: deadline)
    }

    /// Shared mode: the host only listens; the kernel brings the controller up and scans.
    var listensOnly: Bool { mode == .shared }

    /// The parameters of the running scanner, or of the next one.
    var parameters: ScanParameters { shared.withLock { $0.parameters } }

    /// New scan parameters without a restart of the adapter: the running scanner (if any) is stopped — scanning
    /// disabled, its reports drained to the last one — and a new one started with them on the same controller, by
    /// the scanner task itself, so this never races a recovery step for the session's scanner. A recovery that
    /// starts a scanner afterwards uses them too. Safe from any thread.
    func updateScan(_ new: ScanParameters) {
        let restart = shared.withLock { s -> AsyncStream<Void>.Continuation? in
            defer { s.parameters = new }
            return s.parameters != new ? s.restart : nil
        }
        restart?.yield()
    }

    var counters: SightingSourceCounters {
        // The live session: its scanner's counts, and its controller's and transport's (added to the box only when the
        // session ends, once, whatever the number of scanners it ran). Read under the box's lock, where a finished
        // scanner or session moves into the box, so nothing is counted twice or missed for a moment.
        shared.withLock { box in
            var c = box.tally.counters
            for scanner in box.tally.ending { c.add(scanner: scanner) }
            if let s = box.session {
                if let scanner = s.scanner { c.add(scanner: scanner) }
                c.add(link: s.controller)
            }
            return c
        }
    }

    func post(_ event: L.Event) { inboxContinuation.yield(event) }

    func run(
        adapter: @escaping @Sendable (AdapterReport) -> Void,
        sighting: @escaping @Sendable (Sighting) -> Void
    ) async {
        var machine = L(configuration: configuration)
        let device = spec.description
        shared.withLock { $0.sighting = sighting }
        defer { tearDown() }
        await withTaskGroup(of: Void.self) { group in
            var timer: Task<Void, Never>?
            defer { timer?.cancel() }
            if case .kernel(let name) = spec { group.addTask { await self.followRfkill(adapter: name) } }
            if case .kernel(let name) = spec, listensOnly { group.addTask { await self.followIndexes(adapter: name) } }
            post(.start)
            for await event in inbox {
                if Task.isCancelled { break }
                let actions = machine.handle(event, now: clock.now())
                shared.withLock {
                    $0.statistics = machine.statistics
                    $0.deadline = machine.deadline
                }
                for action in actions {
                    switch action {
                    case .publish(let status, let reason):
                        let info = shared.withLock { s -> ControllerInfo? in
                            s.usable = status == .poweredOn
                            return s.usable ? s.session?.info : nil
                        }
                        // Logged here, once, for every consumer (run, scan, explain, enrol): the runtime does not
                        // log it again.
                        logger.log(
                            level: status == .poweredOn ? .info : .warning,
                            "adapter \(device): \(status)\(reason.map { " (\($0))" } ?? "")")
                        adapter(
                            AdapterReport(
                                state: status, device: device, mode: mode,
                                address: info?.address.description, hciVersion: info.map { Int($0.version.hciVersion) },
                                manufacturer: info.map { Int($0.version.companyIdentifier) },
                                scanning: info.map { .of($0.supportsExtendedAdvertising) }
                                    ?? (listensOnly && status == .poweredOn ? .observer : .off),
                                reason: reason))
                    case .open:
                        shared.withLock { $0.operationBegan = clock.now() }
                        group.addTask { await self.open(sighting: sighting) }
                    case .run(let step, let attempt, let bound):
                        shared.withLock { $0.operationBegan = clock.now() }
                        logger.warning("adapter \(device): recovery step \(step) (attempt \(attempt) of \(bound))")
                        group.addTask { await self.perform(step, sighting: sighting) }
                    case .recovered(let step, let after):
                        let took = Double(Int(after.seconds * 10)) / 10
                        logger.info(
                            "adapter \(device): scanning again \(took) s after the fault (recovered by \(step))")
                    case .wait(let deadline):
                        timer?.cancel()
                        timer = Task { [clock] in
                            do { try await clock.sleep(until: deadline) } catch { return }
                            self.post(.timePassed)
                        }
                    }
                }
            }
            group.cancelAll()
            shared.withLock { $0.rfkill }?.close()
        }
    }

    // MARK: - Operations (each reports its outcome as events)

    /// Opens the transport, brings the controller up and scans.
    func open(sighting: @escaping @Sendable (Sighting) -> Void) async {
        tearDown()
        let transport: any HCITransport
        do {
            transport = try openTransport(try resolveKernelAdapter(), mode: mode, clock: clock, options: options)
        } catch let e as TransportError where listensOnly && e.kind == .adapterDown {
            // Down by its owner's choice: nothing to retry at pace; its power-on is announced (`followIndexes`).
            post(.adapterPoweredOff(reason: e.message))
            return
        } catch let e as TransportError {
            post(.transportFailed(Self.failure(for: e), reason: e.message))
            return
        } catch {
            post(.transportFailed(.other, reason: "\(error)"))
            return
        }
        let session = Session(transport: transport, controller: HCIController(transport: transport, clock: clock))
        // A listener subscribes before the controller reads anything (`watch` starts it), so no report is missed.
        let listener =
            listensOnly
            ? Scanner(controller: session.controller, mode: .observer, parameters: parameters, logger: logger) : nil
        shared.withLock { $0.session = session }
        post(.transportOpened)
        watch(session)
        if let listener {
            listen(session, with: listener, sighting: sighting)
        } else {
            await bringUpAndScan(session, sighting: sighting)
        }
    }

    /// Shared mode: the kernel's scan, followed (the transport started our discovery when it opened), and the
    /// peripheral role through the kernel's L2CAP sockets. Usable at once: there is nothing to bring up.
    func listen(_ session: Session, with scanner: Scanner, sighting: @escaping @Sendable (Sighting) -> Void) {
        shared.withLock { _ in session.scanner = scanner }
        session.scannerTask = Task {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { try? await scanner.run() }
                group.addTask { await self.deliver(scanner, to: sighting) }
                await group.waitForAll()
            }
            self.shared.withLock { s in
                s.tally.ended(scanner)
                if session.scanner === scanner { session.scanner = nil }
            }
        }
        if let role, case .kernel(let configured) = spec {
            let name = shared.withLock { $0.boundAdapter } ?? configured  // the adapter `open` resolved
            session.roleTask = Task { await role.serve(kernelAdapter: name) }
        }
        post(.scanEnabled)
    }

    func perform(_ step: L.Step, sighting: @escaping @Sendable (Sighting) -> Void) async {
        if listensOnly {
            // The kernel owns the controller: the host's only remedy is a new session (sockets, discovery, monitor).
            await open(sighting: sighting)
            return
        }
        let session = shared.withLock { $0.session }
        switch step {
        case .reenableScan:
            guard let session, let info = session.info else {
                post(.stepFailed(step, reason: "no open controller to re-enable scanning on"))
                return
            }
            await gate.withGate {
                guard self.shared.withLock({ $0.duties }).contains(.scan) else {
                    self.post(.scanEnabled)  // the other adapter scans: this one is usable, nothing to re-enable
                    return
                }
                await self.stopScanner(session)
                self.startScanner(session, info: info, announce: true, sighting: sighting)
            }
        case .resetController:
            guard let session else {
                post(.stepFailed(step, reason: "no open transport to reset the controller on"))
                return
            }
            await gate.withGate {
                session.info = nil  // a duty change meanwhile waits for the bring-up
                await self.stopScanner(session)
                // HCI Reset ends every link (Vol 4, Part E, §7.3.2): the role starts afresh after the bring-up.
                await self.stopRole(session)
            }
            await bringUpAndScan(session, sighting: sighting)
        case .powerCycle:
            // Closing the transport powers the controller off as far as the host can: the kernel closes the
            // adapter when the user channel is released (hci_dev_do_close), an H4 stream's peer sees the link
            // drop. Reopening brings it up from power-on defaults.
            await open(sighting: sighting)
        case .rfkillUnblock:
            guard case .kernel(let name) = spec, let device = shared.withLock({ $0.rfkill }),
                let index = rfkillSwitch(configured: name) ?? shared.withLock({ $0.rfkillIndex })
            else {
                post(.stepFailed(step, reason: "no rfkill switch to unblock for \(spec)"))
                return
            }
            do {
                try device.setSoftBlock(index: index, blocked: false)
                // The outcome is rfkill's change event (then the machine opens the adapter), or the step's bound.
            } catch {
                post(.stepFailed(step, reason: "rfkill unblock: \(error)"))
            }
        case .usbReset:
            await resetUSBDevice(sighting: sighting)
        case .awaitAdapter:
            await open(sighting: sighting)
        }
    }

    func bringUpAndScan(_ session: Session, sighting: @escaping @Sendable (Sighting) -> Void) async {
        do {
            let info = try await ControllerBringUp.run(session.controller, logger: logger)
            post(.bringUpSucceeded)
            await gate.withGate {
                session.info = info
                await self.applyDuties(session, info: info, announce: true, sighting: sighting)
            }
        } catch is CancellationError {
            return
        } catch let e as HCIError {
            if e.code == .transportClosed { return }  // the watcher reports the end of the transport
            if e.code == .timedOut { return }  // the watcher reports the unanswered command
            // An LE command (OGF 0x08) refused as unknown: a BR/EDR-only controller, which no reset can fix.
            let leUnsupported =
                e.code == .commandFailed && e.opcode?.ogf == HCIOpcode.leControllerGroup
                && e.status == .unknownCommand
            post(.bringUpFailed(reason: e.description, leUnsupported: leUnsupported))
        } catch {
            post(.bringUpFailed(reason: "\(error)", leUnsupported: false))
        }
    }

    /// With two adapters: the duties this one carries from now on. On an open controller the scanner and the role
    /// are started or stopped at once; otherwise they apply at the next bring-up. Safe from any task.
    func assign(_ new: AdapterRoles.Duties) async {
        let sighting = shared.withLock { s -> (@Sendable (Sighting) -> Void)? in
            defer { s.duties = new }
            return s.duties != new ? s.sighting : nil
        }
        guard let sighting else { return }
        await gate.withGate {
            guard let session = self.shared.withLock({ $0.session }), let info = session.info else { return }
            await self.applyDuties(session, info: info, announce: false, sighting: sighting)
        }
    }

    /// Makes the session's scanner and role match the duties (called holding the gate). `announce`: a bring-up
    /// waits for `scanEnabled` — from the scanner, or at once when this adapter is not to scan.
    func applyDuties(
        _ session: Session, info: ControllerInfo, announce: Bool,
        sighting: @escaping @Sendable (Sighting) -> Void
    ) async {
        let (live, d) = shared.withLock { ($0.session === session, $0.duties) }
        guard live else { return }  // torn down meanwhile
        if d.contains(.scan), session.scannerTask == nil {
            startScanner(session, info: info, announce: announce, sighting: sighting)
            if !announce { post(.scanDutyChanged) }
        } else if !d.contains(.scan) {
            if session.scannerTask != nil {
                await stopScanner(session)
                post(.scanDutyChanged)
            }
            if announce { post(.scanEnabled) }
        }
        if d.contains(.connect), let role, session.roleTask == nil {
            let controller = session.controller
            session.roleTask = Task { await role.serve(controller: controller, info: info) }
        } else if !d.contains(.connect), let role, session.roleTask != nil {
            // The links move to the other adapter: ended here first, so the peripherals advertise for it — unless
            // this adapter is failing (that is why the duty moves), when they are lost with it.
            if shared.withLock({ $0.usable }) { await role.handOver() }
            await stopRole(session)
        }
    }

    func stopRole(_ session: Session) async {
        let task = session.roleTask
        session.roleTask = nil
        task?.cancel()
        await task?.value
    }

    /// Runs the controller and forwards its faults.
    func watch(_ session: Session) {
        let faults = session.controller.events()
        let controller = session.controller
        session.tasks.append(Task { try? await controller.run() })
        session.tasks.append(
            Task {
                for await e in faults.ignoringErrors {
                    switch e {
                    case .event(.hardwareError(let code)):
                        self.post(.hardwareError(code: code))
                    case .commandTimedOut(let opcode, let after, let sentAt):
                        // Sent before the latest step began (a Reset of the attempt before): that attempt's business,
                        // already settled; counting it against this one would climb the ladder for nothing.
                        if let began = self.shared.withLock({ $0.operationBegan }), sentAt < began {
                            self.logger.debug(
                                "adapter \(self.spec): \(opcode) from before the current step timed out; ignored")
                            continue
                        }
                        self.post(
                            .commandTimedOut(reason: "\(opcode) got no answer within \(after): the controller is stuck")
                        )
                    case .transportEnded(let error):
                        // Only the live session's end matters; a session torn down on purpose is not a fault.
                        let live = self.shared.withLock { $0.session === session }
                        guard live else { continue }
                        // A shared session ends with its adapter's removal (Delete Index); the index watcher, reading the
                        // same news in order after the adapter's Close Index, tells the machine.
                        if self.listensOnly, (error as? TransportError)?.isAdapterRemoval == true { continue }
                        self.post(.transportEnded(reason: error.map { "\($0)" } ?? "the transport ended"))
                    default:
                        continue
                    }
                }
            })
    }

    func tearDown() {
        // Out of the live view and its controller's and transport's drops into the box in one step (see `counters`).
        let ended = shared.withLock { box -> Session? in
            guard let s = box.session else { return nil }
            box.session = nil
            box.tally.counters.add(link: s.controller)
            // Its scanner is still counting until its task ends: in view meanwhile, as an ending scanner.
            if let scanner = s.scanner { box.tally.ending.append(scanner) }
            return s
        }
        guard let session = ended else { return }
        session.scannerTask?.cancel()
        session.roleTask?.cancel()
        for t in session.tasks { t.cancel() }
        session.transport.close()
    }

    static func failure(for e: TransportError) -> L.OpenFailure {
        switch e.kind {
        case .noSuchAdapter: .absent
        case .permissionDenied: .permissionDenied
        case .unsupported: .unsupported
        case .rfkillBlocked: .blocked
        default: .other
        }
    }
}
