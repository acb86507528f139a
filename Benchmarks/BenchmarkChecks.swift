import BLETransport

/// The checks a benchmark failed (a missed target, a scoring that could not run): `blegateway-bench` goes on to the
/// next benchmark and exits 1 at the end, naming them, so `make bench` is a check as well as a report.
let failedBenchmarkChecks = Locked<[String]>([])
