import Testing

@testable import BLEESPHome

/// Requests decoded from the bytes aioesphomeapi sends (protobuf as api.proto numbers the fields).
struct ESPHomeRequestTests {
    @Test func helloCarriesTheClientAndItsAPIVersion() throws {
        // client_info (1) = "Home Assistant", api_version_major (2) = 1, api_version_minor (3) = 10.
        let bytes: [UInt8] = [0x0A, 0x0E] + Array("Home Assistant".utf8) + [0x10, 0x01, 0x18, 0x0A]
        #expect(
            try ESPHomeRequest(.helloRequest, bytes) == .hello(clientInfo: "Home Assistant", apiMajor: 1, apiMinor: 10))
    }

    @Test func aSubscriptionSaysWhetherItWantsRawAdvertisements() throws {
        #expect(
            try ESPHomeRequest(.subscribeBluetoothLEAdvertisementsRequest, [0x08, 0x01])
                == .subscribeAdvertisements(.rawAdvertisements))
        #expect(try ESPHomeRequest(.subscribeBluetoothLEAdvertisementsRequest, []) == .subscribeAdvertisements([]))
    }

    @Test func bytesThatAreNotTheNamedMessageThrowAndUnknownTypesAreNamedByNumber() {
        // A length-delimited field whose length runs past the end.
        #expect(throws: (any Error).self) { try ESPHomeRequest(.helloRequest, [0x0A, 0x05, 0x41]) }
        #expect(
            try! ESPHomeRequest(ESPHomeMessageType(rawValue: 999), [1, 2, 3])
                == .unknown(ESPHomeMessageType(rawValue: 999)))
        #expect(try! ESPHomeRequest(.pingRequest, []) == .ping)
    }
}
