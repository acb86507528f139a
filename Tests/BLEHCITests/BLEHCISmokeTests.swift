import Testing
@testable import BLEHCI
