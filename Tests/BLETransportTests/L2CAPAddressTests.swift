import Glibc
import Testing

@testable import BLETransport

@Suite struct L2CAPAddressTests {
    @Test func textIsMostSignificantFirstAndBytesLeastSignificantFirst() {
        let a = L2CAPAddress("00:AA:01:02:03:F4", type: .public)
        #expect(a?.bytes == [0xF4, 0x03, 0x02, 0x01, 0xAA, 0x00])
        #expect(a?.text == "00:AA:01:02:03:F4")
        #expect(L2CAPAddress("c0:ff:ee:00:00:01", type: .random)?.text == "C0:FF:EE:00:00:01")
    }

    @Test func malformedTextIsRejected() {
        for text in [
            "", "00:AA:01:02:03", "00:AA:01:02:03:04:05", "00:AA:01:02:03:G4", "0:AA:01:02:03:04",
            "00-AA-01:02:03:04", "00:AA:01:02:03:",
        ] {
            #expect(L2CAPAddress(text, type: .public) == nil, "\(text)")
        }
        // The text is read by the one address parser, `BDAddress`: the dashed form is the same address.
        #expect(L2CAPAddress("00-AA-01-02-03-04", type: .public) == L2CAPAddress("00:AA:01:02:03:04", type: .public))
        #expect(L2CAPAddress(bytes: [1, 2, 3], type: .public) == nil)
    }

    @Test func theTypeIsPartOfTheAddress() {
        let p = L2CAPAddress("C0:00:00:00:00:01", type: .public)!
        let r = L2CAPAddress("C0:00:00:00:00:01", type: .random)!
        #expect(p != r)
        #expect(p.description == "C0:00:00:00:00:01 (public)")
        #expect(r.description == "C0:00:00:00:00:01 (random)")
    }

    @Test func addressTypesAreTheKernelsBdaddrTypesAndUnknownOnesPrintByNumber() {
        // include/net/bluetooth/bluetooth.h: BDADDR_BREDR 0, BDADDR_LE_PUBLIC 1, BDADDR_LE_RANDOM 2.
        #expect(L2CAPAddress.AddressType.public.rawValue == 1)
        #expect(L2CAPAddress.AddressType.random.rawValue == 2)
        #expect(L2CAPAddress.AddressType(rawValue: 7).description == "address type 7")
    }
}

@Suite struct L2CAPErrorTests {
    @Test func aRefusedConnectNamesTheErrnoAndSaysToEnableLE() {
        let e = L2CAPError.from(ECONNREFUSED, "connect hci0 → 00:AA:01:01:00:01 (public)", adapter: "hci0")
        #expect(e.kind == .connectionFailed)
        #expect(e.errno == ECONNREFUSED)
        #expect(e.message.contains("ECONNREFUSED, Connection refused (errno \(ECONNREFUSED))"))
        #expect(e.message.contains("btmgmt -i hci0 le on"))
        #expect(e.message.hasPrefix("connect hci0 → 00:AA:01:01:00:01 (public): "))
    }

    @Test func eachSocketErrnoMapsToAKindTheCallerCanActOn() {
        let cases: [(Int32, TransportError.Kind, String)] = [
            (EHOSTUNREACH, .connectionFailed, "EHOSTUNREACH"),
            (ECONNRESET, .connectionFailed, "ECONNRESET"),
            (ETIMEDOUT, .timedOut, "ETIMEDOUT"),
            (ENETDOWN, .adapterDown, "ENETDOWN"),
            (ENODEV, .noSuchAdapter, "ENODEV"),
            (EADDRINUSE, .adapterBusy, "EADDRINUSE"),
            (EACCES, .permissionDenied, "EACCES"),
            (EAFNOSUPPORT, .unsupported, "EAFNOSUPPORT"),
            (EIO, .io, "EIO"),
        ]
        for (code, kind, name) in cases {
            let e = L2CAPError.from(code, "x", adapter: "hci0")
            #expect(e.kind == kind, "\(name)")
            #expect(e.message.contains(name + ", "), "\(e.message)")
        }
    }

    @Test func anUnknownErrnoPrintsByNumber() {
        #expect(L2CAPError.describe(4095).hasPrefix("errno 4095, "))
    }
}
