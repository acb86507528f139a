import Testing
@testable import BLESpool
