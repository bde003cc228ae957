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
            OptionSpec("--input", value: "[NAME=]FILE.npy", repeats: true, help: "Run on this input tensor instead of random values (token ids, a sequence length): NAME=FILE, or one per graph input in order."),
            OptionSpec("--rows", value: "TABLE", help: "A tabular model: time predict on the rows of TABLE held in memory (rows/s)."),
            OptionSpec("--images", value: "DIR", help: "Classify the image files below DIR one call at a time and in one batch call, and compare (images/s)."),
            OptionSpec("--head", value: "ROWSxCOLS", help: "Measure the image head's fit on synthetic rows instead (no MODEL): in memory, or out of core past --memory."),
            OptionSpec("--memory", value: "SIZE", help: "With --head: the memory budget (default half the machine's), e.g. 2G."),
            OptionSpec("--ceiling", help: "Measure the machine's float ceiling instead (no MODEL): sgemm 1024³ of mltool's packed kernel and of OpenBLAS, on 1 and 2 threads (or T)."),
        ]
    ) { args in
        if let shape = args.string("--head") { return print(try HeadScaleBenchmark.report(shape: shape, memory: args.string("--memory"), json: args.has("--json"))) }
        if args.has("--ceiling") {
            guard args.positionals.isEmpty else { throw CLIError.usage(command: "bench", message: "--ceiling takes no MODEL") }
            let threads = try args.int("--threads", default: 0)
            let seconds = try args.double("--seconds", default: 1)
            guard threads >= 0, seconds > 0 else {
                throw CLIError.usage(command: "bench", message: "--threads ≥ 0 and --seconds > 0")
            }
            let rows = GemmCeiling.measure(GemmCeiling.Parameters(threads: threads == 0 ? [1, 2] : [threads], seconds: seconds))
            if args.has("--json") {
                let items = rows.map { String(format: "{\"kernel\": %@, \"threads\": %d, \"gflops\": %.2f}", TaskOutput.jsonString($0.kernel), $0.threads, $0.gflops) }
                print("{\"cpu_level\": \(TaskOutput.jsonString(Engine.cpuLevel)), \"sgemm_size\": 1024, \"ceiling\": [\(items.joined(separator: ", "))]}")
            } else {
                print("sgemm 1024³, CPU level \(Engine.cpuLevel)")
                for r in rows {
                    let label = r.kernel.padding(toLength: 14, withPad: " ", startingAt: 0) + " \(r.threads) thread\(r.threads == 1 ? "" : "s")"
                    print("  \(label)  " + String(format: "%.1f GFLOP/s", r.gflops))
                }
            }
            return
        }
        guard args.positionals.count == 1 else { throw CLIError.usage(command: "bench", message: "expected one MODEL") }
        let path = args.positionals[0]
        if let table = args.string("--rows") {
            var bench = TabularBenchmark(modelPath: path, table: table)
            bench.seconds = try args.double("--seconds", default: bench.seconds)
            let r = try bench.run()
            if args.has("--json") {
                print(try TaskOutput.json(r))
            } else {
                print("\(path): \(r.rows) rows of \(table) in memory, \(r.runs) runs")
                print(String(format: "  throughput     %.0f rows/s (best run %.2f ms)", r.rowsPerSecond, r.bestSeconds * 1000))
            }
            return
        }
        if let folder = args.string("--images") {
            var bench = ClassificationBenchmark(modelPath: path, images: try DirectoryWalk.expand([folder]))
            bench.threads = try args.int("--threads", default: bench.threads)
            let r = try bench.run()
            if args.has("--json") {
                print(String(format: "{\"model\": %@, \"images\": %d, \"threads\": %d, \"one_by_one_images_per_second\": %.3f, \"batch_images_per_second\": %.3f}",
                             TaskOutput.jsonString(path), r.images, r.threads, r.oneByOneImagesPerSecond, r.batchImagesPerSecond))
            } else {
                print("\(path): \(r.images) images from \(folder), \(r.threads) thread\(r.threads == 1 ? "" : "s")")
                print(String(format: "  one by one     %.1f images/s", r.oneByOneImagesPerSecond))
                print(String(format: "  one batch call %.1f images/s (%.2f× one by one)", r.batchImagesPerSecond, r.batchImagesPerSecond / r.oneByOneImagesPerSecond))
            }
            return
        }
        var bench = Benchmark(modelPath: path)
        bench.batch = try args.int("--batch", default: bench.batch)
        bench.threads = try args.int("--threads", default: bench.threads)
        bench.seconds = try args.double("--seconds", default: bench.seconds)
        let files = args.strings("--input")
        if !files.isEmpty { bench.inputs = try GraphRun(model: try ModelLoader.load(path), path: path).inputs(files) }
        let r = try bench.run()
        if args.has("--json") {
            print(String(format: "{\"model\": %@, \"batch\": %d, \"threads\": %d, \"runs\": %d, \"images_per_second\": %.3f, \"latency_median_ms\": %.3f, \"latency_p90_ms\": %.3f, \"load_ms\": %.3f, \"setup_ms\": %.3f, \"cpu_level\": %@, %@}",
                         TaskOutput.jsonString(path), r.batch, r.threads, r.runs, r.imagesPerSecond, r.latencyMedian * 1000, r.latencyP90 * 1000, r.load * 1000, r.setup * 1000, TaskOutput.jsonString(Engine.cpuLevel), r.memoryJSON))
        } else {
            print("\(path): batch \(r.batch), \(r.threads) thread\(r.threads == 1 ? "" : "s"), \(r.runs) runs")
            print(String(format: "  throughput     %.1f images/s", r.imagesPerSecond))
            print(String(format: "  latency        median %.2f ms, p90 %.2f ms per batch", r.latencyMedian * 1000, r.latencyP90 * 1000))
            print(String(format: "  model load     %.1f ms (read, checksums, metadata)", r.load * 1000))
            print(String(format: "  engine set-up  %.1f ms", r.setup * 1000))
            print("  kernels        \(Engine.cpuLevel)")
            if let memory = r.memorySummary { print("  memory         \(memory)") }
        }
    }
}
