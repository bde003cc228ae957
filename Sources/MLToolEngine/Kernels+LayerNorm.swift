import CMLToolKernels
import MLToolCore

// layerNorm: x (…) normalised over its trailing axes from `axis` (a row of `inner` values per outer index):
// y = (x − mean) / √(variance + ε) · scale + bias, the variance the mean of (x − mean)², scale and bias `inner`
// values each (absent: 1 and 0). With a `statistic`, one value per row instead: the mean or 1 / √(variance + ε).

extension Reference {
    static func layerNorm(_ s: Step, _ x: UnsafePointer<Float>, _ xs: [Int], _ y: UnsafeMutablePointer<Float>) {
        let ax = try! Program.axis(s.axis ?? -1, rank: xs.count, s)   // validated by shape inference
        let inner = xs[ax...].reduce(1, *), outer = xs[..<ax].reduce(1, *)
        for o in 0..<outer {
            let row = x + o * inner, out = y + o * inner
            var sum: Float = 0
            for i in 0..<inner { sum += row[i] }
            let mean = sum / Float(inner)
            var squares: Float = 0
            for i in 0..<inner { squares += (row[i] - mean) * (row[i] - mean) }
            let inv = 1 / (squares / Float(inner) + s.epsilon).squareRoot()
            if let statistic = s.statistic { y[o] = statistic == "mean" ? mean : inv; continue }
            for i in 0..<inner {
                out[i] = (row[i] - mean) * inv * (s.weight?.pointer[i] ?? 1) + (s.bias?.pointer[i] ?? 0)
            }
        }
    }
}

extension Fast {
    /// Rows split across threads; each row's sums in eight lanes (`mlk_layer_norm_rows`), the same for any split and
    /// at every CPU level.
    static func layerNorm(_ s: Step, _ x: UnsafePointer<Float>, _ xs: [Int], _ y: UnsafeMutablePointer<Float>, threads: Int) {
        guard let ax = try? Program.axis(s.axis ?? -1, rank: xs.count, s) else { return }   // checked by shape inference
        let inner = xs[ax...].reduce(1, &*), outer = xs[..<ax].reduce(1, &*)
        guard inner > 0, s.statistic == nil else { Reference.layerNorm(s, x, xs, y); return }
        nonisolated(unsafe) let (x, y) = (x, y)
        nonisolated(unsafe) let scale = s.weight.map { UnsafePointer($0.pointer) }, bias = s.bias.map { UnsafePointer($0.pointer) }
        let eps = s.epsilon
        let parts = outer &* inner >= copyParallelThreshold ? threads : 1
        parallel(outer, parts: parts) { lo, hi in
            mlk_layer_norm_rows(x, y, Int64(inner), Int64(lo), Int64(hi), scale, bias, eps)
        }
    }
}
