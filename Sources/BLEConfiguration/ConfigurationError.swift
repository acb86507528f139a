/// A configuration problem with where it is: the file's line and column, and the key path.
public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    public var path: String
    public var line: Int?
    public var column: Int?
    public var message: String

    public init(path: String, line: Int? = nil, column: Int? = nil, _ message: String) {
        self.path = path
        self.line = line
        self.column = column
        self.message = message
    }

    /// The message of a key this version does not know. The gateway reads past it (a file written for a newer version
    /// still runs), but `config check` refuses a local file that has one: a typo (`brokr:`) would otherwise leave the
    /// default in force without anyone noticing.
    public static let unknownKey = "unknown key, ignored"

    public var isUnknownKey: Bool { message == Self.unknownKey }

    public var description: String {
        var at = ""
        if let line { at = "line \(line)" + (column.map { ", column \($0)" } ?? "") + ": " }
        return "\(at)\(path.isEmpty ? "" : path + ": ")\(message)"
    }
}
