import Testing

@testable import BLETransport

/// The project's one Bluetooth address type and parser (configuration, command line, topics, sockets).
@Suite struct BDAddressTests {
    @Test func theFormsPeopleAndToolsWriteAreOneAddress() throws {
        let a = try #require(BDAddress("C0:FF:EE:00:00:01"))
        #expect(a.rawValue == 0xC0FF_EE00_0001)
        #expect(BDAddress("c0:ff:ee:00:00:01") == a)
        #expect(BDAddress("C0-FF-EE-00-00-01") == a)
        #expect(BDAddress("c0ffee000001") == a)
        #expect(a.description == "C0:FF:EE:00:00:01")
        #expect(a.topicComponent == "c0ffee000001")
        #expect(BDAddress(topicComponent: a.topicComponent) == a)
    }

    @Test func anythingElseIsRefused() {
        for text in [
            "", "C0:FF:EE:00:00", "C0:FF:EE:00:00:01:02", "C0:FF:EE:00:00:0G", "C:0FF:EE:00:00:01", "C0:FF-EE:00:00:01",
            "C0.FF.EE.00.00.01", "+0FFEE000001", "C0FFEE00001", " C0:FF:EE:00:00:01", "\u{FF43}0ffee000001",
        ] {
            #expect(BDAddress(text) == nil, "\(text)")
        }
        #expect(BDAddress(topicComponent: "C0:FF:EE:00:00:01") == nil)
        #expect(BDAddress(topicComponent: "+0ffee000001") == nil)
    }

    @Test func bytesAreLeastSignificantFirstAsOnTheAir() throws {
        let a = try #require(BDAddress(bytes: [0x01, 0x00, 0x00, 0xEE, 0xFF, 0xC0]))
        #expect(a == BDAddress("C0:FF:EE:00:00:01"))
        #expect(a.bytes == [0x01, 0x00, 0x00, 0xEE, 0xFF, 0xC0])
        #expect(BDAddress(bytes: [1, 2, 3]) == nil)
    }
}
