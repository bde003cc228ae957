import CMLToolKernels
import COpenBLAS
import Dispatch
import MLToolCore

/// The machine's own float ceiling: single-precision GEMM throughput of the engine's packed kernel (the one convs
/// and dense layers run on, split across threads the way the engine splits them) and of OpenBLAS, on a square
/// product, at each thread count. A benchmark reports its rows as fractions of it.
public enum GemmCeiling {
    public struct Parameters: Sendable {
        /// M = N = K of the product.
        public var size = 1024
        /// The thread counts measured.
        public var threads = [1, 2]
        /// Seconds per measurement; the fastest run counts.
        public var seconds = 1.0

        public init(size: Int = 1024, threads: [Int] = [1, 2], seconds: Double = 1.0) {
            self.size = size
            self.threads = threads
            self.seconds = seconds
        }
    }

    public struct Measurement: Sendable, Equatable {
        /// "mltool packed" or "openblas".
        public let kernel: String
        public let threads: Int
        public let gflops: Double
    }

    /// Both kernels at every thread count of `p`, in that order; OpenBLAS is left on one thread afterwards (as the
    /// engine keeps it).
    public static func measure(_ p: Parameters = Parameters()) -> [Measurement] {
        let n = max(16, p.size)
        var rng = SplitMix64(seed: 1)
        let a = (0..<(n &* n)).map { _ in rng.nextUnit() * 2 - 1 }, w = (0..<(n &* n)).map { _ in rng.nextUnit() * 2 - 1 }
        let packed = Buffer(uninitialized: Int(mlk_packed_count(Int64(n), Int64(n))))
        mlk_pack(w, Int64(n), Int64(n), packed.pointer)
        let y = Buffer(count: n &* n)
        let flops = 2 * Double(n) * Double(n) * Double(n)
        var out: [Measurement] = []
        a.withUnsafeBufferPointer { ap in
            w.withUnsafeBufferPointer { wp in
                guard let a = ap.baseAddress, let w = wp.baseAddress else { return }
                for t in p.threads where t >= 1 {
                    let mine = best(seconds: p.seconds) {
                        Fast.packedGemm(a, lda: n, UnsafePointer(packed.pointer), rows: n, n: n, k: n, bias: nil,
                                        y.pointer, act: .none, threads: t)
                    }
                    out.append(Measurement(kernel: "mltool packed", threads: t, gflops: flops / mine / 1e9))
                    openblas_set_num_threads(Int32(t))
                    let blas = best(seconds: p.seconds) { Fast.sgemm(n, n, n, a, n, w, n, y.pointer, n) }
                    openblas_set_num_threads(1)
                    out.append(Measurement(kernel: "openblas", threads: t, gflops: flops / blas / 1e9))
                }
            }
        }
        return out
    }

    /// The fastest of the runs of `body` made within `seconds` (at least 3, after one warm-up), in seconds.
    static func best(seconds: Double, _ body: () -> Void) -> Double {
        body()
        let start = DispatchTime.now().uptimeNanoseconds
        var fastest = Double.infinity, runs = 0
        while runs < 3 || Double(DispatchTime.now().uptimeNanoseconds &- start) / 1e9 < seconds {
            let t0 = DispatchTime.now().uptimeNanoseconds
            body()
            fastest = min(fastest, Double(DispatchTime.now().uptimeNanoseconds &- t0) / 1e9)
            runs += 1
        }
        return fastest
    }
}
