import Testing

@testable import BLEGateway

@Suite struct SystemFactsTests {
    @Test func residentMemoryIsReadFromProc() {
        // A running test process has at least a megabyte resident; 0 would mean the read failed.
        #expect(SystemFacts.residentBytes() > 1_000_000)
    }

    @Test(arguments: [(Int32(0), true), (4, true), (5, false), (-1, false)])
    func onlyTheKernelsSynchronisedStatesCountAsSynchronised(_ state: Int32, _ expected: Bool) {
        #expect(SystemFacts.isSynchronized(adjtimexState: state) == expected)
    }
}
