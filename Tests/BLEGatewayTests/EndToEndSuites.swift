import Testing

/// The end-to-end suites — a real mosquitto, the simulator, child processes, virtual clocks tied to wall time or to
/// the process being idle — run one at a time. Side by side they starve each other: blocking waits on child
/// processes and brokers hold the few threads of the cooperative pool (two on a two-core machine), and a scaled
/// clock keeps running meanwhile, so one suite's teardown became another's missed fault. Unit suites still run in
/// parallel with them.
@Suite(.serialized) enum EndToEndSuites {}
