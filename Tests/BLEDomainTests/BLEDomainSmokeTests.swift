import Testing
@testable import BLEDomain
