import Logging

/// The one logging set-up every command shares: lines to standard error at `level` (standard output carries the
/// command's own output: JSON lines, prompts). Called once per process, before the first logger is made.
enum CommandLogging {
    static func bootstrap(level: Logger.Level) {
        LoggingSystem.bootstrap { label in
            var h = StreamLogHandler.standardError(label: label)
            h.logLevel = level
            return h
        }
    }
}
