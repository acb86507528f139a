import BLEConfiguration

/// One message on `<prefix>/<gateway>/enrol` (docs/TOPICS.md): start an enrolment, answer its comparison, or
/// cancel it. Parsed strictly: an unknown key, a wrong type or a value out of range is refused with the reason,
/// which the gateway publishes on `…/enrol/state`.
enum EnrolmentCommand: Equatable {
    struct Start: Equatable {
        var id: String?
        /// The name the identity is kept under.
        var name: String
        /// The Complete Local Name the phone lists.
        var advertise = "BLEGateway"
        var timeoutSeconds = 120.0
        /// Accept the six digits without asking (a device with no display); otherwise a `confirm` message answers.
        var accept = false
    }

    case start(Start)
    case confirm(id: String?, Bool)
    case cancel(id: String?)

    struct Refusal: Error, Equatable {
        var id: String?
        var message: String
    }

    /// Longest name or advertised name taken: the advertised one must fit the 31 octets with the appearance and the
    /// service; the kept one is a label, not a document.
    static let maximumNameLength = 64
    static let timeoutRange = 1.0...600.0

    static func parse(_ payload: [UInt8]) -> Result<EnrolmentCommand, Refusal> {
        guard case .object(let pairs)? = try? RemoteJSONParser.parse(payload) else {
            return .failure(Refusal(message: "the command is not a JSON object"))
        }
        var id: String?
        var name: String?
        var advertise: String?
        var timeout: Double?
        var accept: Bool?
        var confirm: Bool?
        var cancel = false
        for (k, v) in pairs where k == "id" {
            guard case .string(let s) = v, s.count <= maximumNameLength else {
                return .failure(Refusal(message: "\"id\" must be a string of at most \(maximumNameLength) characters"))
            }
            id = s
        }
        func refuse(_ message: String) -> Result<EnrolmentCommand, Refusal> {
            .failure(Refusal(id: id, message: message))
        }
        for (k, v) in pairs {
            switch (k, v) {
            case ("id", _): continue
            case ("name", .string(let s)): name = s
            case ("advertise", .string(let s)): advertise = s
            case ("timeout_s", .number(let n, _)): timeout = n
            case ("accept", .bool(let b)): accept = b
            case ("confirm", .bool(let b)): confirm = b
            case ("cancel", .bool(true)): cancel = true
            default: return refuse("unexpected key or type: \(k)")
            }
        }
        let startKeys = name != nil || advertise != nil || timeout != nil || accept != nil
        if cancel {
            guard !startKeys, confirm == nil else { return refuse("\"cancel\" goes alone (with \"id\")") }
            return .success(.cancel(id: id))
        }
        if let confirm {
            guard !startKeys else { return refuse("\"confirm\" goes alone (with \"id\"): it answers the six digits") }
            return .success(.confirm(id: id, confirm))
        }
        guard let name else { return refuse("\"name\" is required: the name the identity is kept under") }
        var start = Start(id: id, name: name)
        for (field, text) in [("name", name), ("advertise", advertise ?? start.advertise)] {
            guard !text.isEmpty, text.count <= maximumNameLength, !text.contains(where: \.isNewline) else {
                return refuse("\"\(field)\" must be one line of 1 to \(maximumNameLength) characters")
            }
        }
        if let advertise { start.advertise = advertise }
        if let timeout {
            guard timeoutRange.contains(timeout) else {
                return refuse("\"timeout_s\" must be between 1 and 600 seconds")
            }
            start.timeoutSeconds = timeout
        }
        if let accept { start.accept = accept }
        return .success(.start(start))
    }
}
