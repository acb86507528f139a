import Foundation

/// Facts about the machine the gateway reports in its health and stamps on readings.
public enum SystemFacts {
    /// Resident memory of this process, from /proc/self/statm (pages × page size).
    public static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// Whether the kernel considers the system clock synchronised (by NTP, chrony or timesyncd).
    ///
    /// `adjtimex(2)` with `modes = 0` only reads, and returns the clock state: `TIME_ERROR` (5) while
    /// the clock is unsynchronised — as on a Raspberry Pi, which has no RTC, until NTP has answered.
    /// Glibc's Swift module does not export <sys/timex.h>, so the call is declared here; the
    /// argument is a zeroed buffer larger than any `struct timex` (208 bytes on LP64).
    public static func clockIsSynchronized() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 512)
        return isSynchronized(adjtimexState: buffer.withUnsafeMutableBytes { systemAdjtimex($0.baseAddress!) })
    }

    /// TIME_OK 0, TIME_INS 1, TIME_DEL 2, TIME_OOP 3, TIME_WAIT 4 are synchronised states;
    /// TIME_ERROR 5 is not, and -1 means the call failed (then we cannot claim synchronisation).
    static func isSynchronized(adjtimexState state: Int32) -> Bool {
        (0...4).contains(state)
    }
}

@_silgen_name("adjtimex")
private func systemAdjtimex(_ timex: UnsafeMutableRawPointer) -> Int32
