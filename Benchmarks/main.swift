// `make bench`: each benchmark measures itself and prints its figures; docs/BENCHMARKS.md records them.
// Usage: blegateway-bench [NAME ...] [-- BENCH ARGS]; with no names, all of them run in turn.
import Foundation

let all: [(String, @Sendable ([String]) async -> Void)] = [
    ("decode", { runAdvertisementDecodingBenchmark(arguments: $0) }),
    ("sensors", { runSensorDecodingBenchmark(arguments: $0) }),
    ("hci", { runHCIBenchmark(args: $0) }),
    ("ranging", { await runRangingBenchmark(arguments: $0) }),
    ("presence", { await runPresenceBenchmark(arguments: $0) }),
    ("spool", { await runSpoolBenchmark(arguments: $0) }),
    ("sim", { runSimulatorBenchmark(arguments: $0) }),
    ("mqtt", { do { try await runMQTTBenchmark(arguments: $0) } catch { print("mqtt benchmark failed: \(error)") } }),
    (
        "pipeline",
        { do { try await runPipelineBenchmark(arguments: $0) } catch { print("pipeline benchmark failed: \(error)") } }
    ),
    (
        "transport",
        { do { try await runTransportBenchmark(args: $0) } catch { print("transport benchmark failed: \(error)") } }
    ),
    ("links", { runLinksBenchmark(args: $0) }),
    ("ranging-scale", { await runRangingScaleBenchmark(args: $0) }),
    ("peripherals", { await runPeripheralsBenchmark(args: $0) }),
    ("replay", { do { try await runReplayBenchmark(args: $0) } catch { print("replay benchmark failed: \(error)") } }),
    (
        "fleet",
        { do { try await runFleetBenchmark(arguments: $0) } catch { print("fleet benchmark failed: \(error)") } }
    ),
    ("history", { await runHistoryBenchmark(arguments: $0) }),
    (
        "esphome",
        { do { try await runESPHomeBenchmark(arguments: $0) } catch { print("esphome benchmark failed: \(error)") } }
    ),
    (
        "gateway-idle",
        {
            do { try await runGatewayIdleBenchmark(args: $0) } catch {
                print("gateway-idle benchmark failed: \(error)")
                failedBenchmarkChecks.withLock { $0.append("gateway-idle: \(error)") }
            }
        }
    ),
    (
        "adapter-idle",
        {
            do { try await runAdapterIdleBenchmark(args: $0) } catch {
                print("adapter-idle benchmark failed: \(error)")
            }
        }
    ),
]

let argv = Array(CommandLine.arguments.dropFirst())
let split = argv.firstIndex(of: "--")
let names = split.map { Array(argv[..<$0]) } ?? argv
let rest = split.map { Array(argv[($0 + 1)...]) } ?? []
let chosen = names.isEmpty ? all : all.filter { names.contains($0.0) }
if chosen.isEmpty {
    print("unknown benchmark; choose from: \(all.map(\.0).joined(separator: ", "))")
    exit(2)
}
for (name, run) in chosen {
    print("== \(name)")
    await run(rest)
}
let failed = failedBenchmarkChecks.withLock { $0 }
if !failed.isEmpty {
    print("failed: " + failed.joined(separator: "; "))
    exit(1)
}
