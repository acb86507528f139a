// One libFuzzer input is an H4 byte stream. It goes through everything that reads untrusted controller and radio
// bytes: the H4 deframer, every event through HCIEvent.parse and Command Complete's return parameters through each
// command's response parser, the LE (Extended) Advertising Report parsers, the AD structure decoder,
// beacon recognition, the sensor decoders (BTHome, Xiaomi, ATC/PVVX, Govee, SwitchBot, Victron, Inkbird …, the
// encrypted ones under a key so their decryption runs), the JSON line encoder and the scan filter. Any trap or sanitizer report is
// a finding; the parsers promise to return nil or flag issues instead.
import BLEDomain
import BLEHCI
import BLETransport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))

    // The raw input is also taken as bare AD data, so the AD decoder sees shapes no report allows.
    exercise(Advertisement(decoding: bytes[...]))

    var deframer = H4Deframer()
    // Split the stream in two so the deframer's partial-packet path runs too.
    let half = size / 2
    deframer.append(bytes[..<half])
    while let p = deframer.next() { handle(p) }
    deframer.append(bytes[half...])
    while let p = deframer.next() { handle(p) }
    return 0
}

func handle(_ packet: H4Packet) {
    // Every event through the parser the host reads them with, and a Command Complete's return parameters through
    // each command's own response parser (a controller chooses those octets, for any opcode it likes).
    if packet.type == .event, let event = HCIEvent.parse(packet.payload[...]),
        case .commandComplete(let complete) = event
    {
        for command in commands { responses(command, complete.returnParameters) }
    }
    // Event header (Core v5.4, Vol 4, Part E, §5.4.4): code, length; LE Meta (0x3E) then subevent.
    let p = packet.payload[...]
    guard packet.type == .event, p.count >= 3, p[p.startIndex] == 0x3E else { return }
    let parameters = p.dropFirst(3)
    switch p[p.startIndex + 2] {
    case 0x02: _ = LEAdvertisingReport.parseLegacy(parameters) { exercise(Sighting(report: $0, timestamp: 1)) }
    case 0x0D: _ = LEAdvertisingReport.parseExtended(parameters) { exercise(Sighting(report: $0, timestamp: 1)) }
    default: break
    }
}

/// Every command the host sends and reads a Command Complete for.
let commands: [any HCICommand.Type] = [
    DisconnectCommand.self, ReadRSSICommand.self, LECreateConnectionCommand.self, LECreateConnectionCancelCommand.self,
    LEConnectionUpdateCommand.self, LERemoteConnectionParameterRequestReplyCommand.self,
    LERemoteConnectionParameterRequestNegativeReplyCommand.self, LEExtendedCreateConnectionCommand.self,
    ResetCommand.self, ReadLocalVersionInformationCommand.self, ReadLocalSupportedCommandsCommand.self,
    ReadLocalSupportedFeaturesCommand.self, ReadBufferSizeCommand.self, ReadBDADDRCommand.self,
    SetEventMaskCommand.self, LESetEventMaskCommand.self, LEReadBufferSizeCommand.self,
    LEReadLocalSupportedFeaturesCommand.self, LEReadMaximumDataLengthCommand.self,
    LESetAdvertisingParametersCommand.self, LESetAdvertisingDataCommand.self, LESetScanResponseDataCommand.self,
    LESetAdvertisingEnableCommand.self, LELongTermKeyRequestReplyCommand.self,
    LELongTermKeyRequestNegativeReplyCommand.self, LESetExtendedAdvertisingParametersCommand.self,
    LESetExtendedAdvertisingDataCommand.self, LESetExtendedAdvertisingEnableCommand.self,
    LESetScanParametersCommand.self, LESetScanEnableCommand.self, LESetExtendedScanParametersCommand.self,
    LESetExtendedScanEnableCommand.self,
]

func responses<C: HCICommand>(_ command: C.Type, _ returnParameters: ArraySlice<UInt8>) {
    _ = C.parseResponse(returnParameters)
}

let filter = try! ScanFilter(parsing: ["uuid:FEAA", "name:K", "company:0x004C", "rssi:-100"])

func exercise(_ ad: Advertisement) {
    exercise(
        Sighting(
            address: BDAddress(rawValue: 0x1122_3344_5566), addressType: .random, rssi: -50, txPower: nil,
            timestamp: 0, isConnectable: false, isScanResponse: false, advertisement: ad))
}

func exercise(_ s: Sighting) {
    let line = s.jsonLine
    // The line is one line: no raw control character may survive escaping.
    precondition(!line.utf8.contains(where: { $0 < 0x20 }), "control character in JSON line")
    _ = s.advertisement.name
    _ = s.advertisement.serviceUUIDs
    _ = filter.matches(s)
    _ = s.identity.id
    _ = SensorDecoder.decode(s.advertisement, address: s.address, keys: .none)
    _ = SensorDecoder.decode(s.advertisement, address: s.address, keys: sensorKeys)
}

// The same 16-octet key for the advertisers the inputs use, so encrypted frames reach their decryption.
let sensorKeys = SensorKeys(octets: [BDAddress(rawValue: 0x1122_3344_5566): Array(0..<16)])
