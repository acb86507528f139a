import BLETransport
import Foundation
import Testing

@testable import BLEConfiguration

/// The enrolled identities' file: written 0600, updated in place, refused when others may read it, and joined to
/// the configuration's keys at load.
@Suite struct IdentityKeyFileTests {
    static func directory() throws -> URL {
        let d = FileManager.default.temporaryDirectory.appendingPathComponent("ids-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
        return d
    }

    static let irk = HexDigits.parseDigits("ec0234a357c8ad05341010a60a397d9b", count: 16)!

    @Test func aFileOthersMayReadIsRefusedWithoutShowingTheKey() throws {
        let d = try Self.directory()
        defer { try? FileManager.default.removeItem(at: d) }
        let path = d.appendingPathComponent("identities.yaml").path
        try IdentityKeyFile.enrol(
            .init(name: "watch", irk: Self.irk, address: BDAddress("C0:00:00:00:00:07")!), at: path)
        #expect(try IdentityKeyFile.load(path).count == 1)
        chmod(path, 0o644)
        do {
            _ = try IdentityKeyFile.load(path)
            Issue.record("a 0644 identities file was read")
        } catch let e as IdentityKeyFile.FileError {
            #expect(e.message.contains("chmod 600") && e.message.contains("644"))
            #expect(!"\(e)".lowercased().contains("ec0234a3"))
        }
        // Absent: nothing enrolled yet.
        #expect(try IdentityKeyFile.load(d.appendingPathComponent("none.yaml").path).isEmpty)
    }

    /// 32 hex digits that YAML would read as an integer or a float unless quoted.
    @Test func aKeyThatLooksLikeANumberReadsBackAsTheKey() throws {
        let d = try Self.directory()
        defer { try? FileManager.default.removeItem(at: d) }
        let path = d.appendingPathComponent("identities.yaml").path
        for (n, hex) in ["12345678901234567890123456789012", "123e4567890123456789012345678901"].enumerated() {
            let irk = HexDigits.parseDigits(hex, count: 16)!
            try IdentityKeyFile.enrol(
                .init(name: "n\(n)", irk: irk, address: BDAddress(rawValue: 0xC000_0000_0010 + UInt64(n))), at: path)
        }
        #expect(
            try IdentityKeyFile.entries(path).map { HexDigits.string($0.irk) } == [
                "12345678901234567890123456789012", "123e4567890123456789012345678901",
            ])
        #expect(try IdentityKeyFile.load(path).count == 2)
    }

    @Test func theConfigurationGainsTheEnrolledKeysOnceAndANameWithQuotesSurvives() throws {
        let d = try Self.directory()
        defer { try? FileManager.default.removeItem(at: d) }
        let ids = d.appendingPathComponent("identities.yaml").path
        try IdentityKeyFile.enrol(
            .init(name: "Bob's \"work\" phone", irk: Self.irk, address: BDAddress("5C:F3:70:00:00:01")!), at: ids)
        #expect(try IdentityKeyFile.entries(ids).first?.name == "Bob's \"work\" phone")
        let config = d.appendingPathComponent("gateway.yaml").path
        try """
        identity_keys_file: \(ids)
        identity_keys:
          - {irk: ec0234a357c8ad05341010a60a397d9b, address: "5C:F3:70:00:00:01"}
          - 00112233445566778899aabbccddeeff
        """.write(toFile: config, atomically: true, encoding: .utf8)
        let c = try ConfigurationLoader.load(path: config).configuration
        #expect(c.identityKeys.count == 2)
        try IdentityKeyFile.enrol(
            .init(name: "other", irk: [UInt8](repeating: 7, count: 16), address: BDAddress("5C:F3:70:00:00:02")!),
            at: ids)
        #expect(try ConfigurationLoader.load(path: config).configuration.identityKeys.count == 3)
    }
}
