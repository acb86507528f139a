import Testing
@testable import BLEPublishing
