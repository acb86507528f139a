import Testing

@testable import BLETransport
