/// `--name VALUE` from a benchmark's arguments, or `fallback` when absent or not a whole number.
func benchmarkOption(_ arguments: [String], _ name: String, _ fallback: Int) -> Int {
    guard let i = arguments.firstIndex(of: name), i + 1 < arguments.count, let v = Int(arguments[i + 1]) else {
        return fallback
    }
    return v
}

/// `--name VALUE` as a number, or `fallback` when absent or not a number.
func benchmarkOption(_ arguments: [String], _ name: String, _ fallback: Double) -> Double {
    guard let i = arguments.firstIndex(of: name), i + 1 < arguments.count, let v = Double(arguments[i + 1]) else {
        return fallback
    }
    return v
}
