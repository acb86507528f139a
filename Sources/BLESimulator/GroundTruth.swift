import BLETransport
import Foundation

/// Writes the ground truth as JSON lines (docs/SIMULATOR.md, "Ground truth"): positions,
/// gateway–beacon distances, fault start/end, and links up and down. Buffered; the owner calls `close()`.
final class GroundTruthWriter {
    private let handle: FileHandle
    private var buffer = [UInt8]()

    init(path: String) throws {
        guard FileManager.default.createFile(atPath: path, contents: nil), let h = FileHandle(forWritingAtPath: path)
        else {
            throw ScenarioError(file: path, message: "cannot create the ground-truth file")
        }
        handle = h
        buffer.reserveCapacity(1 << 16)
    }

    static func num(_ v: Double) -> String {
        let r = (v * 1000).rounded() / 1000
        return r == r.rounded() ? String(Int(r)) + ".0" : String(r)
    }

    static func quoted(_ s: String) -> String {
        var out: [UInt8] = []
        JSONWriter.appendString(s, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    func line(_ s: String) {
        buffer += s.utf8
        buffer.append(0x0A)
        if buffer.count >= 1 << 16 { flush() }
    }

    func position(t: Double, emitter: EmitterSpec, at p: Vec3) {
        line(
            "{\"t\":\(Self.num(t)),\"type\":\"position\",\"beacon\":\(Self.quoted(emitter.beaconID)),"
                + "\"name\":\(Self.quoted(emitter.name)),\"role\":\"\(emitter.role.rawValue)\","
                + "\"x\":\(Self.num(p.x)),\"y\":\(Self.num(p.y)),\"z\":\(Self.num(p.z))}")
    }

    func distance(t: Double, gateway: String, beacon: String, distance: Double) {
        line(
            "{\"t\":\(Self.num(t)),\"type\":\"distance\",\"gateway\":\(Self.quoted(gateway)),"
                + "\"beacon\":\(Self.quoted(beacon)),\"distance_m\":\(Self.num(distance))}")
    }

    func fault(t: Double, gateway: String, fault: String, phase: String) {
        line(
            "{\"t\":\(Self.num(t)),\"type\":\"fault\",\"gateway\":\(Self.quoted(gateway)),"
                + "\"fault\":\"\(fault)\",\"phase\":\"\(phase)\"}")
    }

    /// A link between a gateway's controller and a peer began (`up`) or ended (`down`), as the controller's own link
    /// table has it: what tests compare the gateways' reports (and the fleet's one-owner rule) with.
    func link(t: Double, gateway: String, peer: String, phase: String) {
        line(
            "{\"t\":\(Self.num(t)),\"type\":\"link\",\"gateway\":\(Self.quoted(gateway)),"
                + "\"peer\":\(Self.quoted(peer)),\"phase\":\"\(phase)\"}")
    }

    func flush() {
        guard !buffer.isEmpty else { return }
        handle.write(Data(buffer))
        buffer.removeAll(keepingCapacity: true)
    }

    func close() {
        flush()
        try? handle.close()
    }
}
