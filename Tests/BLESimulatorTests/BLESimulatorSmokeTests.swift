import Testing
@testable import BLESimulator
