import Foundation

/// Waits, in real time and without asserting on how long, until `condition` holds; false if it still does not after
/// about five seconds. For what a test cannot be told by an event (another thread's counter, a file's contents);
/// where something announces itself, wait on that instead.
public func eventually(_ condition: () -> Bool) async -> Bool {
    for _ in 0..<5_000 {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return condition()
}
