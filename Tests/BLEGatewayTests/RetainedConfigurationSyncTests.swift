import Foundation
import Testing

@testable import BLEGateway

@Suite struct RetainedConfigurationSyncTests {
    @Test func onlyItsOwnNonceComesBackAndAfterThatNothingIsSent() throws {
        var sync = RetainedConfigurationSync.fresh()
        let sent = try #require(sync.payload)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(sent)) as? [String: String])
        #expect(json.keys.sorted() == ["nonce"])
        // Another start's nonce (a QoS 1 redelivery from an earlier run, another process under the same id).
        let foreign = sync.received(Array(#"{"nonce":"0"}"#.utf8))
        #expect(!foreign)
        #expect(sync.payload == sent)
        let ours = sync.received(sent)
        #expect(ours)
        #expect(sync == .returned)
        #expect(sync.payload == nil)
        // A duplicate of it (QoS 1) changes nothing and wakes nobody again.
        let again = sync.received(sent)
        #expect(!again)
    }

    @Test func eachStartHasItsOwnNonce() {
        #expect(RetainedConfigurationSync.fresh() != RetainedConfigurationSync.fresh())
    }
}
