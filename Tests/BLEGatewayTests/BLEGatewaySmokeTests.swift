import Testing

@testable import BLEGateway
