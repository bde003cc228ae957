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
        /// The process's resident memory just before the model was read and its peak by the end (bytes; nil where
        /// /proc/self/status cannot be read). Their difference is what reading, setting up and running the model
        /// added: its weights as the engine holds them, the activations, the kernels' pages; the runtime's and the
        /// libraries' pages, the same for every model, are in both.
        public var residentBefore: Int?
        public var peakResident: Int?
        /// What the benchmark's own random input batch made resident (bytes; the resident memory just after it was
        /// made less just before): the caller's data, not the model's (602 KB for one 224 × 224 RGB image, 19 MB
        /// for 32 of them).
        public var inputsResident: Int?

        /// What reading, setting up and running the model paged in of mltool's own code and the libraries' (the
        /// growth of every file mapping's resident pages but the model file's, from before it was read to the end;
        /// bytes, nil where /proc/self/smaps cannot be read): the kernels and the loader, shared with every other
        /// process running them and the same for any model using the same kernels, not memory the model holds.
        public var codeResident: Int?

        /// peakResident − residentBefore − inputsResident: what the model itself added.
        public var modelResident: Int? {
            guard let before = residentBefore, let peak = peakResident else { return nil }
            return max(0, peak - before - (inputsResident ?? 0))
        }

        /// modelResident − codeResident: the memory the model holds (its weights as the engine keeps them, read in
        /// place from the file or packed, the arenas, the engine's tables), code left out. Code paged in after the
        /// peak (a float model peaks while its weights are packed, before the first run) is subtracted too, so a
        /// peak at load comes out a little low, never high.
        public var modelOwnResident: Int? {
            guard let model = modelResident, let code = codeResident else { return nil }
            return max(0, model - code)
        }

        /// The six as JSON fields (`"resident_before_load_bytes": …, "peak_resident_bytes": …,
        /// "inputs_resident_bytes": …, "model_resident_bytes": …, "code_resident_bytes": …, "model_own_bytes": …`,
        /// null where unknown), for `mltool bench --json`.
        public var memoryJSON: String {
            [("resident_before_load_bytes", residentBefore), ("peak_resident_bytes", peakResident),
             ("inputs_resident_bytes", inputsResident), ("model_resident_bytes", modelResident),
             ("code_resident_bytes", codeResident), ("model_own_bytes", modelOwnResident)]
                .map { "\"\($0.0)\": \($0.1.map(String.init) ?? "null")" }
                .joined(separator: ", ")
        }

        /// "peak 54.2 MiB resident, 31.5 MiB of it added by the model (22.7 MiB before it was read, 0.6 MiB the
        /// inputs); the model holds 28.4 MiB of it, 3.1 MiB is code paged in"; nil where unknown.
        public var memorySummary: String? {
            guard let before = residentBefore, let peak = peakResident, let model = modelResident else { return nil }
            let mib = { (v: Int) in String(format: "%.1f MiB", Double(v) / 1_048_576) }
            var own = ""
            if let held = modelOwnResident, let code = codeResident {
                own = "; the model holds \(mib(held)) of it, \(mib(code)) is code paged in"
            }
            return "peak \(mib(peak)) resident, \(mib(model)) of it added by the model (\(mib(before)) before it was read, "
                + "\(mib(inputsResident ?? 0)) the inputs)" + own
        }
    }

    public var modelPath: String
    /// Images per run.
    public var batch = 1
    /// Threads (0: all cores).
    public var threads = 0
    /// Measure for about this many seconds (at least 3 runs).
    public var seconds = 5.0
    /// The inputs of every run (`mltool bench --input`: token ids, a sequence length), by graph input name, instead
    /// of random values of the graph's shapes; nil: random values.
    public var inputs: [String: Tensor]?

    public init(modelPath: String) { self.modelPath = modelPath }

    public func run() throws -> Result {
        guard batch >= 1, threads >= 0, seconds > 0 else {
            throw PipelineError.invalidParameter(name: "batch", reason: "--batch ≥ 1, --threads ≥ 0 and --seconds > 0")
        }
        let modelFile = ProcessMemory.fileID(modelPath)
        let codeBefore = ProcessMemory.fileMappedResident(excluding: modelFile)
        let residentBefore = ProcessMemory.field("VmRSS")
        let readStart = Date()
        let model = try ModelLoader.load(modelPath)
        let load = Date().timeIntervalSince(readStart)
        let graph = try ModelLoader.graph(model, modelPath)
        let setupStart = Date()
        let engine = try Engine(model: model, threads: threads)
        let setup = Date().timeIntervalSince(setupStart)
        var rng = SplitMix64(seed: 1)
        var inputs = [String: Tensor]()
        let residentBeforeInputs = ProcessMemory.field("VmRSS")
        for input in graph.inputs {
            if let given = self.inputs?[input.name] { inputs[input.name] = given; continue }
            let (shape, n) = try input.runShape(batch: batch, file: modelPath)
            inputs[input.name] = Tensor(shape: shape, data: (0..<n).map { _ in rng.nextUnit() * 2 - 1 })
        }
        let residentAfterInputs = ProcessMemory.field("VmRSS")
        var inputsResident: Int?
        if let b = residentBeforeInputs, let a = residentAfterInputs { inputsResident = max(0, a - b) }
        _ = try engine.run(inputs)  // warm-up: first-touch of the arena and packed weights
        var latencies = [Double]()
        let start = Date()
        while Date().timeIntervalSince(start) < seconds || latencies.count < 3 {
            try checkCancellation()
            let t0 = Date()
            _ = try engine.run(inputs)
            latencies.append(Date().timeIntervalSince(t0))
        }
        let peakResident = ProcessMemory.field("VmHWM")   // before reading smaps, whose text takes memory too
        let codeAfter = ProcessMemory.fileMappedResident(excluding: modelFile)
        latencies.sort()
        let total = latencies.reduce(0, +)
        return Result(batch: batch, threads: threads == 0 ? ProcessInfo.processInfo.activeProcessorCount : threads,
                      runs: latencies.count, imagesPerSecond: Double(latencies.count * batch) / total,
                      latencyMedian: latencies[latencies.count / 2],
                      latencyP90: latencies[min(latencies.count - 1, Int(Double(latencies.count) * 0.9))],
                      load: load, setup: setup, residentBefore: residentBefore, peakResident: peakResident,
                      inputsResident: inputsResident,
                      codeResident: codeBefore.flatMap { b in codeAfter.map { max(0, $0 - b) } })
    }
}

/// This process's memory figures from /proc/self/status and /proc/self/smaps.
enum ProcessMemory {
    /// A "kB" line of /proc/self/status (VmRSS: resident now, VmHWM: the peak so far) in bytes; nil where the file or
    /// the line is missing (not Linux, a restricted /proc).
    static func field(_ name: String) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(name + ":") {
            let parts = line.dropFirst(name.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard parts.count == 2, parts[1] == "kB", let kb = Int(parts[0]) else { return nil }
            return kb.multipliedReportingOverflow(by: 1024).overflow ? nil : kb * 1024
        }
        return nil
    }

    /// A file's device and inode as /proc/self/smaps prints them ("fd:01", 1234); nil where it cannot be read.
    static func fileID(_ path: String) -> (device: String, inode: UInt64)? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        let dev = UInt64(st.st_dev)
        // glibc's gnu_dev_major / gnu_dev_minor, which smaps prints as %02x:%02x.
        let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & ~UInt64(0xfff))
        let minor = (dev & 0xff) | ((dev >> 12) & ~UInt64(0xff))
        return (String(format: "%02llx:%02llx", major, minor), UInt64(st.st_ino))
    }

    /// The resident bytes of every mapping of a file (inode ≠ 0) but `excluded`: the executable's and the shared
    /// libraries' pages. nil where /proc/self/smaps cannot be read.
    static func fileMappedResident(excluding excluded: (device: String, inode: UInt64)?) -> Int? {
        // procfs files report size 0: read to the end rather than by their size.
        guard let data = FileHandle(forReadingAtPath: "/proc/self/smaps")?.readDataToEndOfFile(), !data.isEmpty
        else { return nil }
        var total = 0, counting = false
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if fields.count >= 5, fields[0].contains("-"), let inode = UInt64(fields[4]) {
                // A mapping's header: "start-end perms offset dev inode [path]".
                counting = inode != 0 && !(excluded.map { String(fields[3]) == $0.device && inode == $0.inode } ?? false)
            } else if counting, fields.count == 3, fields[0] == "Rss:", fields[2] == "kB", let kb = Int(fields[1]) {
                total &+= kb &* 1024
            }
        }
        return total
    }
}

/// Classifying image files one call at a time against one batch call (`mltool bench MODEL --images DIR`): the same
/// files, the same classifier, decoding included, best of `repeats` interleaved rounds.
public struct ClassificationBenchmark: Sendable {
    public struct Result: Sendable {
        public var images: Int
        public var threads: Int
        /// `classify(contentsOf:)` for each file in turn.
        public var oneByOneImagesPerSecond: Double
        /// One `classify(batch:)` over all the files.
        public var batchImagesPerSecond: Double
    }

    public var modelPath: String
    public var images: [String]
    public var threads = 0
    public var repeats = 3

    public init(modelPath: String, images: [String]) {
        self.modelPath = modelPath
        self.images = images
    }

    public func run() throws -> Result {
        guard !images.isEmpty, threads >= 0, repeats >= 1 else {
            throw PipelineError.invalidParameter(name: "images", reason: "--images needs at least one image, --threads ≥ 0")
        }
        let classifier = try ImageClassifier(model: try ModelLoader.load(modelPath), path: modelPath, threads: threads)
        let urls = images.map { URL(fileURLWithPath: $0) }
        _ = try classifier.classify(contentsOf: urls[0])  // warm-up: arena and packed weights
        var single = Double.infinity, batched = Double.infinity
        for _ in 0..<repeats {
            try checkCancellation()
            var t0 = Date()
            for url in urls { _ = try classifier.classify(contentsOf: url) }
            single = min(single, Date().timeIntervalSince(t0))
            t0 = Date()
            let results = classifier.classify(batch: images.map { .path($0) })
            batched = min(batched, Date().timeIntervalSince(t0))
            if let failure = results.first(where: { if case .failure = $0 { true } else { false } }), case .failure(let e) = failure {
                throw e
            }
        }
        let n = Double(images.count)
        return Result(images: images.count, threads: threads == 0 ? ProcessInfo.processInfo.activeProcessorCount : threads,
                      oneByOneImagesPerSecond: n / single, batchImagesPerSecond: n / batched)
    }
}
