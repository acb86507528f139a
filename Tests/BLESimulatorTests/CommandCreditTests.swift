import Glibc
import Testing

@testable import BLESimulator

/// Num_HCI_Command_Packets is 1: a host may send a command only after the previous command's
/// Command Complete/Status reached it (Core v5.4, Vol 4, Part E, §4.4).
@Suite struct CommandCreditTests {
    @Test func aCommandBeforeThePreviousResponseWasWrittenIsCountedAsSentWithoutCredit() {
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        defer { close(fds[1]) }
        // No writer thread yet: responses stay queued, as if the host had not received them.
        let conn = HostConnection(fd: fds[0])
        defer { close(fds[0]) }
        let reset = SimEvents.commandComplete(.reset, [0x00])
        #expect(conn.enqueueResponse([reset]) == false)  // the first command had the credit
        #expect(conn.enqueueResponse([reset]) == true)  // the second came before the first answer left
        #expect(conn.pendingBytes == 2 * reset.count)
    }
}
