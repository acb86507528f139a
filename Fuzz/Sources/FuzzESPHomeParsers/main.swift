// One libFuzzer input is what a client on the network sends the gateway's ESPHome API (anyone who can reach port
// 6053): a selector octet (bit 0: a Noise server with a fixed key, else plaintext; bits 1…7: the size of the reads
// the bytes arrive in), then the bytes. Each whole message is decoded as the request its type names. Any trap or
// sanitizer report is a finding: the connection promises frames, a reply or a close, whatever the bytes.
import BLEESPHome

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    let psk: [UInt8]? = data[0] & 1 == 1 ? Array(0..<32) : nil
    let chunk = max(1, Int(data[0] >> 1))
    var connection = ESPHomeConnection(psk: psk, name: "fuzz", mac: "00:00:00:00:00:00")
    var start = 0
    while start < bytes.count {
        let end = min(start + chunk, bytes.count)
        for action in connection.received(bytes[start..<end]) {
            if case .message(let type, let message) = action {
                _ = try? ESPHomeRequest(type, message)
                _ = connection.frame(.pingResponse, [])
            }
        }
        start = end
    }
    return 0
}
