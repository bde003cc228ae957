#if canImport(Glibc)
import Glibc
#endif
import COpenBLAS
import Dispatch
import MLToolCore

/// How much memory the in-memory head needs: the one rule that chooses between it and the out-of-core head
/// (`mltool train --memory`, docs/SCALE.md).
public enum HeadMemory {
    /// Bytes the in-memory head holds at its peak for `rows` feature rows of `width` floats: the per-image rows and
    /// the standardised matrix built from them, side by side.
    public static func inMemoryBytes(rows: Int, width: Int) -> Int {
        let (a, o1) = rows.multipliedReportingOverflow(by: width)
        let (b, o2) = a.multipliedReportingOverflow(by: 2 * MemoryLayout<Float>.size)
        return o1 || o2 ? .max : b
    }

    /// Whether rows × width features train out of core under `budget` bytes.
    public static func outOfCore(rows: Int, width: Int, budget: Int) -> Bool {
        inMemoryBytes(rows: rows, width: width) > budget
    }
}

/// The head's fit on synthetic rows, for `mltool bench --head ROWSxCOLS`: the memory and time of the in-memory and
/// out-of-core paths at sizes no data set here reaches (issue 21: 2,000,000 × 1,280). The rows are `classes`
/// clusters: a seeded centre per class plus uniform noise (synthetic, for memory and time only).
public enum HeadBenchmark {
    public struct Result: Sendable {
        public var rows: Int, cols: Int, classes: Int
        public var outOfCore: Bool
        /// Making the rows (and writing them to the scratch file, out of core).
        public var fillSeconds: Double
        /// The standardiser's two passes and the in-place standardisation.
        public var standardizeSeconds: Double
        /// One pass of the objective (loss and gradient over every row: what an L-BFGS evaluation costs), the best
        /// and the mean of `passes`.
        public var bestPassSeconds: Double, meanPassSeconds: Double
        public var passes: Int
        /// The process's peak resident memory at the end (getrusage), bytes.
        public var peakRSSBytes: Int
    }

    /// "2000000x1280" → (2000000, 1280); nil unless both are ≥ 1 and the floats fit in memory addresses.
    public static func parseShape(_ text: String) -> (rows: Int, cols: Int)? {
        let parts = text.lowercased().split(separator: "x", omittingEmptySubsequences: false)
        guard parts.count == 2, let r = Int(parts[0]), let c = Int(parts[1]), r >= 1, c >= 1,
              (try? Checked.mul(Checked.mul(r, c), 4)) != nil else { return nil }
        return (r, c)
    }

    /// Makes the rows in memory, or in a row file in `directory` when `HeadMemory` says they exceed `budget`,
    /// standardises them, then times `passes` evaluations of the objective with its gradient.
    public static func run(rows n: Int, cols d: Int, classes k: Int = 10, budget: Int, directory: String,
                           passes: Int = 3) throws -> Result {
        openblas_set_num_threads(1)
        let outOfCore = HeadMemory.outOfCore(rows: n, width: d, budget: budget)
        var rng = SplitMix64(seed: 21)
        let centres = (0..<(k &* d)).map { _ in rng.nextUnit() - 0.5 }
        let labels = (0..<n).map { Int32($0 % k) }
        /// Rows s..<e into `out`: centre of the row's class + noise in [-1, 1).
        func make(_ s: Int, _ e: Int, _ out: UnsafeMutablePointer<Float>) {
            var g = SplitMix64(seed: 1000 &+ UInt64(s))
            for r in s..<e {
                let row = out + (r &- s) &* d, c = (r % k) &* d
                for j in 0..<d { row[j] = centres[c &+ j] + 2 * g.nextUnit() - 1 }
            }
        }
        let clock = ContinuousClock()
        var t0 = clock.now
        func lap() -> Double {
            let e = clock.now - t0
            t0 = clock.now
            return Double(e.components.seconds) + Double(e.components.attoseconds) * 1e-18
        }
        var fill = 0.0, standardize = 0.0, times = [Double]()
        let theta = [Float](repeating: 0.01, count: d &* k &+ k)
        var gradient = [Float](repeating: 0, count: theta.count)
        func time<M: FeatureMatrix>(_ m: M) {
            let objective = SoftmaxObjective(matrix: m, labels: labels, rowWeights: nil, classes: k, l2: 1e-3)
            for _ in 0..<max(passes, 1) {
                _ = lap()
                _ = theta.withUnsafeBufferPointer { t in
                    gradient.withUnsafeMutableBufferPointer { objective.evaluate(t.baseAddress!, gradient: $0.baseAddress!) }
                }
                times.append(lap())
            }
        }
        if outOfCore {
            let file = try FeatureRowFile(directory: directory, cols: d)
            let block = UnsafeMutablePointer<Float>.allocate(capacity: 4096 &* d)
            defer { block.deallocate() }
            var s = 0
            while s < n {
                let e = min(n, s &+ 4096)
                make(s, e, block)
                try file.append(block, count: e &- s)
                s = e
            }
            fill = lap()
            let st = try Standardizer.fit(file: file, rows: n)
            try st.apply(file: file, rows: 0..<n)
            standardize = lap()
            time(FileRows(file: file, first: 0, rows: n))
            try file.check()
        } else {
            var x = [Float](repeating: 0, count: try Checked.mul(n, d))
            x.withUnsafeMutableBufferPointer { make(0, n, $0.baseAddress!) }
            fill = lap()
            let st = try Standardizer.fit(x: x, rows: n, cols: d)
            try st.apply(&x, rows: n)
            standardize = lap()
            x.withUnsafeBufferPointer { time(DenseRows(base: $0.baseAddress!, rows: n, cols: d)) }
        }
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Result(rows: n, cols: d, classes: k, outOfCore: outOfCore, fillSeconds: fill,
                      standardizeSeconds: standardize, bestPassSeconds: times.min() ?? 0,
                      meanPassSeconds: times.reduce(0, +) / Double(max(times.count, 1)), passes: times.count,
                      peakRSSBytes: usage.ru_maxrss * 1024)
    }
}
