import Dispatch
import Foundation

/// A pointer that may cross into `concurrentPerform` tasks; each task writes a disjoint range.
struct SharedPointer<T>: @unchecked Sendable {
    let p: UnsafeMutablePointer<T>
}

/// The weighted, L2-regularised softmax cross-entropy of a parameter vector θ = [W (d×k row-major), b (k)].
///
/// Rows are processed in fixed blocks and fixed chunks, and partial sums are added in chunk order, so the result
/// does not depend on how many threads ran the chunks.
struct SoftmaxObjective<Matrix: FeatureMatrix> {
    let matrix: Matrix
    let labels: [Int32]
    /// Per-row weights normalised to sum to 1; nil means 1/n each.
    let rowWeights: [Double]?
    let classes: Int
    var l2: Double

    static var blockRows: Int { 4096 }
    static var chunkRows: Int { 128 }

    var parameterCount: Int { matrix.cols * classes + classes }

    struct Evaluation {
        /// The objective J (or the mean cross-entropy when l2 is 0 and rows are unweighted).
        var loss: Double
        /// Rows whose arg-max class is their label.
        var correct: Int
    }

    /// J(θ), and ∇J(θ) into `gradient` when it is given.
    func evaluate(_ theta: UnsafePointer<Float>, gradient: UnsafeMutablePointer<Float>?) -> Evaluation {
        let n = matrix.rows, d = matrix.cols, k = classes
        let bias = theta + d &* k
        if let gradient { gradient.initialize(repeating: 0, count: d &* k &+ k) }
        let blockCap = min(Self.blockRows, max(n, 1))
        let z = UnsafeMutablePointer<Float>.allocate(capacity: blockCap &* k)
        defer { z.deallocate() }
        let maxChunks = (blockCap + Self.chunkRows - 1) / Self.chunkRows
        // Per chunk: [loss, correct, bias gradient (k)].
        let stride = 2 &+ k
        let partial = UnsafeMutablePointer<Double>.allocate(capacity: maxChunks &* stride)
        defer { partial.deallocate() }
        var loss = 0.0, correct = 0
        var biasGrad = [Double](repeating: 0, count: k)
        let uniform = 1.0 / Double(max(n, 1))

        var start = 0
        while start < n {
            let end = min(start + Self.blockRows, n)
            matrix.forward(rows: start..<end, weights: theta, classes: k, into: z)
            let chunkRows = Self.chunkRows, blockStart = start
            let chunks = (end - start + chunkRows - 1) / chunkRows
            let zs = SharedPointer(p: z), ps = SharedPointer(p: partial)
            let bs = SharedPointer(p: UnsafeMutablePointer(mutating: bias))
            let wantGradient = gradient != nil
            labels.withUnsafeBufferPointer { lab in
                let labs = SharedPointer(p: UnsafeMutablePointer(mutating: lab.baseAddress!))
                withRowWeights { rw in
                    let rws = rw.map { SharedPointer(p: UnsafeMutablePointer(mutating: $0)) }
                    DispatchQueue.concurrentPerform(iterations: chunks) { c in
                        let r0 = blockStart &+ c &* chunkRows, r1 = min(r0 &+ chunkRows, end)
                        let out = ps.p + c &* stride
                        out.initialize(repeating: 0, count: stride)
                        for r in r0..<r1 {
                            let row = zs.p + (r &- blockStart) &* k
                            var m = -Float.infinity, arg = 0
                            for j in 0..<k {
                                let v = row[j] + bs.p[j]
                                row[j] = v
                                if v > m { m = v; arg = j }
                            }
                            var s = 0.0
                            for j in 0..<k { s += exp(Double(row[j] - m)) }
                            let lse = Double(m) + log(s)
                            let y = Int(labs.p[r])
                            let w = rws.map { $0.p[r] } ?? uniform
                            out[0] += w * (lse - Double(row[y]))
                            if arg == y { out[1] += 1 }
                            if wantGradient {
                                for j in 0..<k {
                                    var g = exp(Double(row[j]) - lse)
                                    if j == y { g -= 1 }
                                    g *= w
                                    out[2 &+ j] += g
                                    row[j] = Float(g)
                                }
                            }
                        }
                    }
                }
            }
            for c in 0..<chunks {
                let out = partial + c &* stride
                loss += out[0]; correct += Int(out[1])
                for j in 0..<k { biasGrad[j] += out[2 &+ j] }
            }
            if let gradient { matrix.accumulateTransposed(rows: start..<end, g: z, classes: k, into: gradient) }
            start = end
        }
        if l2 != 0 {
            var sq = 0.0
            for i in 0..<(d &* k) { sq += Double(theta[i]) * Double(theta[i]) }
            loss += 0.5 * l2 * sq
            if let gradient {
                for i in 0..<(d &* k) { gradient[i] = Float(Double(gradient[i]) + l2 * Double(theta[i])) }
            }
        }
        if let gradient { for j in 0..<k { gradient[d &* k &+ j] = Float(biasGrad[j]) } }
        return Evaluation(loss: loss, correct: correct)
    }

    private func withRowWeights<R>(_ body: (UnsafePointer<Double>?) -> R) -> R {
        guard let rowWeights else { return body(nil) }
        return rowWeights.withUnsafeBufferPointer { body($0.baseAddress) }
    }
}
