import Testing
@testable import BLEHost
