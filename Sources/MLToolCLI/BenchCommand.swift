import Foundation
import MLToolCore
import MLToolEngine

extension CLI {
    static let bench = CommandSpec(
        name: "bench", abstract: "Measure a model's throughput and latency on inputs of its shape.",
        arguments: "MODEL",
        options: [
            OptionSpec("--batch", value: "N", help: "Images per run (default 1)."),
            OptionSpec("--threads", value: "T", help: "Threads (default: all cores)."),
            OptionSpec("--seconds", value: "S", help: "Measure for about S seconds (default 5)."),
            OptionSpec("--json", help: "Print one JSON object."),
        ]
    ) { args in
        guard args.positionals.count == 1 else {
            throw CLIError.usage(command: "bench", message: "expected one MODEL")
        }
        let path = args.positionals[0]
        let batch = try args.int("--batch", default: 1)
        let threads = try args.int("--threads", default: 0)
        let seconds = try args.double("--seconds", default: 5)
        guard batch >= 1, threads >= 0, seconds > 0 else {
            throw CLIError.usage(command: "bench", message: "--batch ≥ 1, --threads ≥ 0 and --seconds > 0")
        }
        let readStart = Date()
        let model = try ModelLoading.load(path)
        let load = Date().timeIntervalSince(readStart)
        let graph = try ModelLoading.graph(model, path)
        let setupStart = Date()
        let engine = try Engine(model: model, threads: threads)
        let setup = Date().timeIntervalSince(setupStart)
        var rng = SplitMix64(seed: 1)
        var inputs = [String: Tensor]()
        for input in graph.inputs {
            let shape = input.shape.enumerated().map { $0.offset == 0 && $0.element < 0 ? batch : max($0.element, 1) }
            let n = shape.reduce(1, *)
            inputs[input.name] = Tensor(shape: shape, data: (0..<n).map { _ in rng.nextUnit() * 2 - 1 })
        }
        _ = try engine.run(inputs)  // warm-up: first-touch of the arena and packed weights
        var latencies = [Double]()
        let start = Date()
        while Date().timeIntervalSince(start) < seconds || latencies.count < 3 {
            let t0 = Date()
            _ = try engine.run(inputs)
            latencies.append(Date().timeIntervalSince(t0))
        }
        latencies.sort()
        let median = latencies[latencies.count / 2]
        let p90 = latencies[min(latencies.count - 1, Int(Double(latencies.count) * 0.9))]
        let total = latencies.reduce(0, +)
        let rate = Double(latencies.count * batch) / total
        let usedThreads = threads == 0 ? ProcessInfo.processInfo.activeProcessorCount : threads
        if args.has("--json") {
            print(String(format: "{\"model\": %@, \"batch\": %d, \"threads\": %d, \"runs\": %d, \"images_per_second\": %.3f, \"latency_median_ms\": %.3f, \"latency_p90_ms\": %.3f, \"load_ms\": %.3f, \"setup_ms\": %.3f}",
                         jsonString(path), batch, usedThreads, latencies.count, rate, median * 1000, p90 * 1000, load * 1000, setup * 1000))
        } else {
            print("\(path): batch \(batch), \(usedThreads) thread\(usedThreads == 1 ? "" : "s"), \(latencies.count) runs")
            print(String(format: "  throughput     %.1f images/s", rate))
            print(String(format: "  latency        median %.2f ms, p90 %.2f ms per batch", median * 1000, p90 * 1000))
            print(String(format: "  model load     %.1f ms (read, checksums, metadata)", load * 1000))
            print(String(format: "  engine set-up  %.1f ms", setup * 1000))
        }
    }
}
