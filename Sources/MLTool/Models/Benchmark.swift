import Foundation
import MLToolCore
import MLToolEngine

/// A model's throughput and latency on random inputs of its shape (`mltool bench`).
public struct Benchmark: Sendable {
    public struct Result: Sendable {
        public var batch: Int
        public var threads: Int
        public var runs: Int
        public var imagesPerSecond: Double
        public var latencyMedian: Double
        public var latencyP90: Double
        /// Reading the file (checksums, metadata) and setting the engine up, seconds.
        public var load: Double
        public var setup: Double
    }

    public var modelPath: String
    /// Images per run.
    public var batch = 1
    /// Threads (0: all cores).
    public var threads = 0
    /// Measure for about this many seconds (at least 3 runs).
    public var seconds = 5.0

    public init(modelPath: String) { self.modelPath = modelPath }

    public func run() throws -> Result {
        guard batch >= 1, threads >= 0, seconds > 0 else {
            throw PipelineError.invalidParameter(name: "batch", reason: "--batch ≥ 1, --threads ≥ 0 and --seconds > 0")
        }
        let readStart = Date()
        let model = try ModelLoader.load(modelPath)
        let load = Date().timeIntervalSince(readStart)
        let graph = try ModelLoader.graph(model, modelPath)
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
            try checkCancellation()
            let t0 = Date()
            _ = try engine.run(inputs)
            latencies.append(Date().timeIntervalSince(t0))
        }
        latencies.sort()
        let total = latencies.reduce(0, +)
        return Result(batch: batch, threads: threads == 0 ? ProcessInfo.processInfo.activeProcessorCount : threads,
                      runs: latencies.count, imagesPerSecond: Double(latencies.count * batch) / total,
                      latencyMedian: latencies[latencies.count / 2],
                      latencyP90: latencies[min(latencies.count - 1, Int(Double(latencies.count) * 0.9))],
                      load: load, setup: setup)
    }
}
