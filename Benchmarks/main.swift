print("benchmarks: see docs/BENCHMARKS.md")
