import ArgumentParser
import BLETransport

/// `--mode exclusive|shared`: read by its raw value; anything else is refused by the parser, naming both.
extension AdapterMode: ExpressibleByArgument {}
