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
    /// Rows split across threads; each row's sums eight lanes wide (SIMD8), the same for any split.
    static func layerNorm(_ s: Step, _ x: UnsafePointer<Float>, _ xs: [Int], _ y: UnsafeMutablePointer<Float>, threads: Int) {
        guard let ax = try? Program.axis(s.axis ?? -1, rank: xs.count, s) else { return }   // checked by shape inference
        let inner = xs[ax...].reduce(1, &*), outer = xs[..<ax].reduce(1, &*)
        guard inner > 0, s.statistic == nil else { Reference.layerNorm(s, x, xs, y); return }
        nonisolated(unsafe) let (x, y) = (x, y)
        nonisolated(unsafe) let scale = s.weight.map { UnsafePointer($0.pointer) }, bias = s.bias.map { UnsafePointer($0.pointer) }
        let eps = s.epsilon, count = Float(inner), vectors = inner / 8
        let parts = outer &* inner >= copyParallelThreshold ? threads : 1
        parallel(outer, parts: parts) { lo, hi in
            for o in lo..<hi {
                let row = x + o &* inner, out = y + o &* inner
                let rowV = UnsafeRawPointer(row)
                var acc = SIMD8<Float>()
                for v in 0..<vectors { acc += rowV.loadUnaligned(fromByteOffset: v &* 32, as: SIMD8<Float>.self) }
                var sum = acc.sum()
                for i in (vectors &* 8)..<inner { sum += row[i] }
                let mean = sum / count
                let meanV = SIMD8<Float>(repeating: mean)
                var sq = SIMD8<Float>()
                for v in 0..<vectors {
                    let d = rowV.loadUnaligned(fromByteOffset: v &* 32, as: SIMD8<Float>.self) - meanV
                    sq.addProduct(d, d)
                }
                var squares = sq.sum()
                for i in (vectors &* 8)..<inner { squares += (row[i] - mean) * (row[i] - mean) }
                let inv = 1 / (squares / count + eps).squareRoot()
                switch (scale, bias) {
                case let (g?, b?): for i in 0..<inner { out[i] = (row[i] - mean) * inv * g[i] + b[i] }
                case let (g?, nil): for i in 0..<inner { out[i] = (row[i] - mean) * inv * g[i] }
                default: for i in 0..<inner { out[i] = (row[i] - mean) * inv }
                }
            }
        }
    }
}
