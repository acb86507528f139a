import Foundation

/// A spool file set aside while running whose readable rows are not yet committed in the fresh file (`fresh` once
/// the fresh file is open). Its marker (`<path>.salvaging`) is on disk meanwhile, so a crash before that commit is
/// finished by the next start.
struct PendingSalvage {
    var aside: String
    var salvage: SpoolSalvage
    var fresh = false
    var report: SpoolOpenReport
}

extension Spool {
    /// I/O errors in a row (SQLITE_IOERR on commit or read) before the file is quarantined: one can be a hiccup of
    /// the card or the bus; three in a row is a file the spool cannot use.
    static let ioErrorsBeforeQuarantine = 3

    /// Called (under the spool's lock: log, do not call the spool) after each run-time quarantine with its report.
    public func observeQuarantines(_ observer: @escaping @Sendable (SpoolOpenReport) -> Void) {
        databaseLock.withLock { quarantineObserver = observer }
    }

    /// Corruption found while running (SQLITE_CORRUPT, SQLITE_NOTADB), or `ioErrorsBeforeQuarantine` I/O errors in a
    /// row: the file and its WAL are moved aside (`<path>.corrupt-<UTC>`, the durable marker first), what can be read
    /// from them is kept for the next commit, and the spool continues on a fresh file. Readings keep their seq; the
    /// seq never goes back; rows the salvage could not read are counted as lost. Returns whether a fresh file is in
    /// use, so the caller can try again there. Caller holds `databaseLock`.
    func quarantineIfNeeded(_ failure: SpoolError) -> Bool {
        if failure.sqlite?.primary == .ioError { ioErrorsInARow += 1 }
        let corrupt = failure.code == .corrupt
        let failing = failure.sqlite?.primary == .ioError && ioErrorsInARow >= Self.ioErrorsBeforeQuarantine
        // A quarantine whose fresh file could not be opened yet is tried again by whatever fails next.
        guard corrupt || failing || pendingSalvage?.fresh == false else { return false }
        if pendingSalvage == nil {
            let path = configuration.path
            let aside: String
            do { aside = try SpoolSalvage.moveAside(path) } catch {
                lastError = error as? SpoolError ?? failure
                return false
            }
            // Read before the old connection closes: closing checkpoints its WAL into the file set aside.
            let salvage = SpoolSalvage.read(aside)
            var report = SpoolOpenReport()
            report.corruption = failure
            report.movedAsideTo = aside
            report.salvagedReadings = salvage.rows.count
            report.salvagedDeadLetters = salvage.deadLetters.count
            // The rows and dead letters it held that could not be read.
            report.lostReadings =
                max(0, ledger.rows - salvage.rows.count)
                + max(0, ledger.deadLetters - salvage.deadLetters.count)
            pendingSalvage = PendingSalvage(aside: aside, salvage: salvage, report: report)
            quarantines += 1
        }
        guard var pending = pendingSalvage else { return false }
        do {
            let fresh = try Spool.open(configuration)
            let freshStatements = try Statements(fresh)
            var next = try Ledger.load(fresh).ledger
            // Above every seq ever issued, whatever the salvage could read; the counters carry on.
            next.lastSeq = max(ledger.lastSeq, pending.salvage.lastSeq, next.lastSeq)
            next.samples = ledger.samples
            next.deadLettersEvicted = ledger.deadLettersEvicted
            db = fresh
            statements = freshStatements
            ledger = next
        } catch {
            lastError = error as? SpoolError ?? failure
            return false
        }
        pending.fresh = true
        pendingSalvage = pending
        ioErrorsInARow = 0
        return true
    }

    /// The salvage is in the fresh file: the marker goes, the files set aside are kept within their bound, and the
    /// quarantine is reported. Caller holds `databaseLock`.
    func salvageCommitted() {
        guard var pending = pendingSalvage else { return }
        pendingSalvage = nil
        SpoolSalvage.finished(configuration.path)
        let kept = SpoolSalvage.prune(
            configuration.path, keep: configuration.maxSetAsideFiles,
            bytes: configuration.maxBytes)
        pending.report.setAsideRemoved = kept.removed
        pending.report.setAsideFiles = kept.left
        pending.report.setAsideBytes = kept.leftBytes
        lastQuarantine = pending.report
        quarantineObserver?(pending.report)
    }
}
