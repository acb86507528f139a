import Testing

@testable import BLETransport

@Suite struct KernelAdaptersTests {
    typealias E = KernelAdapters.Entry
    // btvirt's addresses (BlueZ emulator/btdev.c get_bdaddr: 00:AA:01:<slot>:<index hi>:<index lo>).
    let present = [
        E(name: "hci0", address: "00:AA:01:00:00:00"), E(name: "hci1", address: "00:AA:01:00:00:01"),
        E(name: "hci2", address: "00:AA:01:01:00:02"),
    ]

    @Test(arguments: [("00:aa:01:00:00:01", "00:AA:01:00:00:01"), ("DE:AD:BE:EF:00:01", "DE:AD:BE:EF:00:01")])
    func addressesAreNormalisedToUpperCase(text: String, normal: String) throws {
        #expect(try KernelAdapters.normalizedAddress(text) == normal)
    }

    @Test(arguments: [
        "", "00:AA:01:00:00", "00:AA:01:00:00:01:02", "00-AA-01-00-00-01", "0:AA:01:00:00:01",
        "00:AA:01:00:00:0G", "000:AA:01:00:00:1", "00:AA:01:00:00:",
    ])
    func malformedAddressesAreRejectedSayingWhatIsExpected(text: String) {
        #expect {
            try KernelAdapters.normalizedAddress(text)
        } throws: {
            guard let e = $0 as? TransportError else { return false }
            return e.kind == .badSpec && e.message.contains("\"\(text)\"") && e.message.contains("six hex bytes")
        }
    }

    @Test func withoutAnAddressTheNamedAdapterIsOpened() throws {
        #expect(try KernelAdapters.resolve(adapter: "hci7", address: nil, present: present) == "hci7")
    }

    @Test func theNamedAdapterIsKeptWhenItHasTheAddress() throws {
        #expect(try KernelAdapters.resolve(adapter: "hci1", address: "00:aa:01:00:00:01", present: present) == "hci1")
    }

    @Test func anAdapterThatCameBackUnderAnotherIndexIsFoundByAddress() throws {
        #expect(try KernelAdapters.resolve(adapter: "hci0", address: "00:AA:01:01:00:02", present: present) == "hci2")
    }

    @Test func twoAdaptersWithOneAddressGiveTheLowestIndex() throws {
        let twins = [E(name: "hci10", address: "11:22:33:44:55:66"), E(name: "hci9", address: "11:22:33:44:55:66")]
        #expect(try KernelAdapters.resolve(adapter: "hci0", address: "11:22:33:44:55:66", present: twins) == "hci9")
    }

    @Test func noAdapterWithTheAddressIsNoSuchAdapterNamingTheAddress() {
        #expect {
            try KernelAdapters.resolve(adapter: "hci0", address: "00:aa:01:00:00:09", present: present)
        } throws: {
            guard let e = $0 as? TransportError else { return false }
            return e.kind == .noSuchAdapter && e.message.contains("00:AA:01:00:00:09")
                && e.message.contains("hci1 00:AA:01:00:00:01")
        }
        #expect {
            try KernelAdapters.resolve(adapter: "hci0", address: "00:aa:01:00:00:09", present: [])
        } throws: { ($0 as? TransportError)?.message.contains("the kernel has no adapter") == true }
    }

    @Test func aMalformedAddressFailsTheOpenAsABadSpec() {
        var options = TransportOptions()
        options.adapterAddress = "hci0"
        #expect {
            try openTransport(.kernel(adapter: "hci0"), clock: SystemClock(), options: options)
        } throws: { ($0 as? TransportError)?.kind == .badSpec }
    }

    @Test func onlyKernelSpecsAreResolved() throws {
        var options = TransportOptions()
        options.adapterAddress = "00:AA:01:00:00:09"
        #expect(try KernelAdapters.resolve(.unix(path: "/run/x.sock"), options: options) == .unix(path: "/run/x.sock"))
    }

    @Test func adapterNamesAreHciAndANumberOnly() {
        #expect(KernelAdapters.index(of: "hci12") == 12)
        #expect(KernelAdapters.index(of: "hci0:11") == nil)
        #expect(KernelAdapters.index(of: "hci") == nil)
        #expect(KernelAdapters.index(of: "hci03") == nil)
        #expect(KernelAdapters.index(of: "hci65535") == nil)
        #expect(KernelAdapters.index(of: "rfkill0") == nil)
    }
}
