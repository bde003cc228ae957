import Foundation
import MLTool

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
        var bench = Benchmark(modelPath: path)
        bench.batch = try args.int("--batch", default: bench.batch)
        bench.threads = try args.int("--threads", default: bench.threads)
        bench.seconds = try args.double("--seconds", default: bench.seconds)
        let r = try bench.run()
        if args.has("--json") {
            print(String(format: "{\"model\": %@, \"batch\": %d, \"threads\": %d, \"runs\": %d, \"images_per_second\": %.3f, \"latency_median_ms\": %.3f, \"latency_p90_ms\": %.3f, \"load_ms\": %.3f, \"setup_ms\": %.3f}",
                         jsonString(path), r.batch, r.threads, r.runs, r.imagesPerSecond, r.latencyMedian * 1000, r.latencyP90 * 1000, r.load * 1000, r.setup * 1000))
        } else {
            print("\(path): batch \(r.batch), \(r.threads) thread\(r.threads == 1 ? "" : "s"), \(r.runs) runs")
            print(String(format: "  throughput     %.1f images/s", r.imagesPerSecond))
            print(String(format: "  latency        median %.2f ms, p90 %.2f ms per batch", r.latencyMedian * 1000, r.latencyP90 * 1000))
            print(String(format: "  model load     %.1f ms (read, checksums, metadata)", r.load * 1000))
            print(String(format: "  engine set-up  %.1f ms", r.setup * 1000))
        }
    }
}
