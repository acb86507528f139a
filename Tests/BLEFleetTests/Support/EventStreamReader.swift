import Foundation

/// A Server-Sent Events client for the tests: `curl -N` (a real HTTP client, unbuffered) reading one of the
/// service's `/events/…` streams; `next(where:)` returns the first event's JSON that satisfies the predicate.
/// curl's `--max-time` bounds every wait: if the expected event never comes, the stream ends and the test fails.
final class EventStreamReader: @unchecked Sendable {
    private let process = Process()
    private let pipe = Pipe()
    private var buffer = Data()

    init(url: String, maxSeconds: Int = 30) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-sN", "--max-time", String(maxSeconds), url]
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    deinit {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    /// The next event whose decoded JSON object satisfies `predicate`, or nil when the stream ended first. The
    /// blocking read happens on a dispatch thread, not on the cooperative pool the service under test runs on.
    func next(where predicate: @escaping @Sendable ([String: Any]) -> Bool) async -> [String: Any]? {
        let found = await withCheckedContinuation { (c: CheckedContinuation<UnsafeJSON, Never>) in
            DispatchQueue.global().async { c.resume(returning: UnsafeJSON(self.read(predicate))) }
        }
        return found.value
    }

    /// A decoded event handed from the reading thread to the test (JSONSerialization's values are not Sendable).
    private struct UnsafeJSON: @unchecked Sendable {
        let value: [String: Any]?
        init(_ value: [String: Any]?) { self.value = value }
    }

    private func read(_ predicate: ([String: Any]) -> Bool) -> [String: Any]? {
        while true {
            while let range = buffer.range(of: Data("\n\n".utf8)) {
                let event = String(decoding: buffer[..<range.lowerBound], as: UTF8.self)
                buffer.removeSubrange(..<range.upperBound)
                for line in event.split(separator: "\n") where line.hasPrefix("data: ") {
                    let data = Data(line.dropFirst(6).utf8)
                    if let json = try? JSONSerialization.jsonObject(with: data) as? [String: Any], predicate(json) {
                        return json
                    }
                }
            }
            let chunk = pipe.fileHandleForReading.availableData
            if chunk.isEmpty { return nil }  // curl ended: the stream closed or --max-time passed
            buffer.append(chunk)
        }
    }
}
