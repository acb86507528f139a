// One libFuzzer input is a selector octet and a document someone else wrote: a remote configuration (JSON, retained
// on the broker, so anyone with publish access reaches it) read and applied as the gateway does, or a configuration
// file through the YAML reader. Any trap or sanitizer report is a finding: both promise a verdict or an error with
// its path, whatever the bytes.
import BLEConfiguration

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    if data[0] & 1 == 0 {
        let verdict = RemoteConfigDocument.read(bytes)
        if let overlay = verdict.overlay {
            var c = GatewayConfiguration()
            overlay.apply(to: &c)
        }
    } else {
        var reader = YAMLConfigurationReader()
        _ = try? reader.read(String(decoding: bytes, as: UTF8.self))
    }
    return 0
}
