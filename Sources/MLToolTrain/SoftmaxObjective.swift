import Dispatch
import Foundation
import MLToolCore

/// The weighted, L2-regularised softmax cross-entropy of a parameter vector θ = [W (d×k row-major), b (k)].
///
/// Rows are processed in fixed chunks (or fixed groups, for dense rows), and partial sums are added in chunk order,
/// so the result does not depend on how many threads ran the chunks.
struct SoftmaxObjective<Matrix: FeatureMatrix> {
    let matrix: Matrix
    let labels: [Int32]
    /// Per-row weights normalised to sum to 1; nil means 1/n each.
    let rowWeights: [Double]?
    let classes: Int
    var l2: Double

    /// Rows per task of the softmax; partial sums are added in chunk order.
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
        if let dense = matrix as? any DenseBlockSource { return evaluateFused(dense, theta, gradient: gradient) }
        // Sparse rows: the logits of all rows (n × k floats, small next to the non-zeros), turned into ∂CE/∂z in
        // place, then one transposed product over all rows.
        let n = matrix.rows, k = classes
        let bias = theta + matrix.cols &* k
        let z = UnsafeMutablePointer<Float>.allocate(capacity: max(n &* k, 1))
        defer { z.deallocate() }
        matrix.forward(rows: 0..<n, weights: theta, classes: k, into: z)
        let chunkRows = Self.chunkRows
        let chunks = (n + chunkRows - 1) / chunkRows
        // Per chunk: [loss, correct, bias gradient (k)].
        let stride = 2 &+ k
        let partial = UnsafeMutablePointer<Double>.allocate(capacity: max(chunks &* stride, 1))
        defer { partial.deallocate() }
        let zs = SharedPointer(p: z), ps = SharedPointer(p: partial)
        let bs = SharedPointer(p: UnsafeMutablePointer(mutating: bias))
        let wantGradient = gradient != nil
        withRows { rows in
            DispatchQueue.concurrentPerform(iterations: chunks) { c in
                let r0 = c &* chunkRows, r1 = min(r0 &+ chunkRows, n)
                let out = ps.p + c &* stride
                out.initialize(repeating: 0, count: stride)
                rows.softmax(zs.p + r0 &* k, rows: r0..<r1, bias: bs.p, classes: k, gradient: wantGradient, into: out)
            }
        }
        if let gradient { matrix.transposedProduct(g: z, classes: k, into: gradient) }
        return finish(theta, gradient: gradient, partials: partial, count: chunks)
    }

    /// Rows per group of the fused path: a group's tasks stay on one thread; depends on n only (not on threads).
    static var groupRows: Int { 256 }
    static var maxGroups: Int { 8 }

    /// Dense rows: each of a fixed number of row groups runs forward, softmax and the gradient product on one
    /// cache-sized block of rows after another (the block is read from memory, or from a file out of core, once,
    /// not twice), into its own partial gradient; the partials are added in group order. The groups run in
    /// parallel. The blocks depend on n and d only, so in-memory and file rows give the same bits.
    func evaluateFused<D: DenseBlockSource>(_ matrix: D, _ theta: UnsafePointer<Float>,
                                            gradient: UnsafeMutablePointer<Float>?) -> Evaluation {
        let n = matrix.rows, d = matrix.cols, k = classes
        let dk = d &* k
        let bias = theta + dk
        // Sub-blocks of about 256 KiB of features, so that the product with the gradient finds them in L2.
        let subRows = min(max(65536 / max(d, 1), 8), Self.chunkRows)
        let groups = max(1, min(Self.maxGroups, (n + Self.groupRows - 1) / Self.groupRows))
        let stride = 2 &+ k
        let wantGradient = gradient != nil
        let partial = UnsafeMutablePointer<Double>.allocate(capacity: groups &* stride)
        defer { partial.deallocate() }
        partial.initialize(repeating: 0, count: groups &* stride)
        // Group 0 writes straight into `gradient`; the others into their own d × k partials.
        let gradCount = wantGradient ? (groups &- 1) &* dk : 0
        let grads = UnsafeMutablePointer<Float>.allocate(capacity: max(gradCount, 1))
        defer { grads.deallocate() }
        let z = UnsafeMutablePointer<Float>.allocate(capacity: groups &* subRows &* k)
        defer { z.deallocate() }
        // Each group's scratch block (used by rows that are not in memory).
        let blocks = UnsafeMutablePointer<Float>.allocate(capacity: groups &* subRows &* d)
        defer { blocks.deallocate() }
        let ps = SharedPointer(p: partial), gs = SharedPointer(p: grads), zs = SharedPointer(p: z)
        let scratch = SharedPointer(p: blocks)
        let g0 = gradient.map { SharedPointer(p: $0) }
        let ts = SharedPointer(p: UnsafeMutablePointer(mutating: theta))
        let bs = SharedPointer(p: UnsafeMutablePointer(mutating: bias))
        withRows { rows in
            DispatchQueue.concurrentPerform(iterations: groups) { g in
                let r0 = g &* n / groups, r1 = (g &+ 1) &* n / groups
                let zg = zs.p + g &* subRows &* k, out = ps.p + g &* stride
                let grad: UnsafeMutablePointer<Float>? = g0.map { g == 0 ? $0.p : gs.p + (g &- 1) &* dk }
                grad?.initialize(repeating: 0, count: dk)
                var s = r0
                while s < r1 {
                    let e = min(s &+ subRows, r1)
                    matrix.withBlock(rows: s..<e, scratch: scratch.p + g &* subRows &* d) { block in
                        DenseBlock.forward(block, count: e &- s, cols: d, weights: ts.p, classes: k, into: zg)
                        rows.softmax(zg, rows: s..<e, bias: bs.p, classes: k, gradient: wantGradient, into: out)
                        if let grad {
                            DenseBlock.accumulateTransposed(block, count: e &- s, cols: d, g: zg, classes: k, into: grad)
                        }
                    }
                    s = e
                }
            }
        }
        if let gradient {
            for g in 1..<max(groups, 1) {
                let src = grads + (g &- 1) &* dk
                for i in 0..<dk { gradient[i] += src[i] }
            }
        }
        return finish(theta, gradient: gradient, partials: partial, count: groups)
    }

    /// Adds up the `count` partials ([loss, correct, bias gradient (k)] each, in order), adds the L2 term and writes
    /// the bias gradient.
    private func finish(_ theta: UnsafePointer<Float>, gradient: UnsafeMutablePointer<Float>?,
                        partials: UnsafePointer<Double>, count: Int) -> Evaluation {
        let k = classes
        var loss = 0.0, correct = 0
        var biasGrad = [Double](repeating: 0, count: k)
        for c in 0..<count {
            let out = partials + c &* (2 &+ k)
            loss += out[0]; correct += Int(out[1])
            for j in 0..<k { biasGrad[j] += out[2 &+ j] }
        }
        let dk = matrix.cols &* classes
        if l2 != 0 {
            let l2 = self.l2, ts = SharedPointer(p: UnsafeMutablePointer(mutating: theta))
            let gs = gradient.map { SharedPointer(p: $0) }
            // ‖W‖² as 512-element blocks added in order (`sumOfBlocks`: parallel, the same bits on any thread
            // count), four Double lanes within a block; the gradient's λW term in the same pass.
            let sq = sumOfBlocks(dk) { start, end in
                let t = ts.p
                var acc = SIMD4<Double>()
                var i = start
                while i &+ 4 <= end {
                    let v = SIMD4<Double>(Double(t[i]), Double(t[i &+ 1]), Double(t[i &+ 2]), Double(t[i &+ 3]))
                    acc += v * v
                    i &+= 4
                }
                var block = acc.sum()
                while i < end { block += Double(t[i]) * Double(t[i]); i &+= 1 }
                if let g = gs?.p { for j in start..<end { g[j] = Float(Double(g[j]) + l2 * Double(t[j])) } }
                return block
            }
            loss += 0.5 * l2 * sq
        }
        if let gradient { for j in 0..<classes { gradient[dk &+ j] = Float(biasGrad[j]) } }
        return Evaluation(loss: loss, correct: correct)
    }

    /// Labels and row weights as pointers that concurrent tasks may share.
    struct RowData: @unchecked Sendable {
        let labels: UnsafePointer<Int32>
        let weights: UnsafePointer<Double>?
        let uniform: Double

        /// Turns logits z (rows × k, without bias) into weighted gradients ∂CE/∂z in place (when `gradient`), and
        /// adds [loss, correct, bias gradient (k)] of the rows to `out`, in row order.
        func softmax(_ z: UnsafeMutablePointer<Float>, rows: Range<Int>, bias: UnsafePointer<Float>, classes k: Int,
                     gradient: Bool, into out: UnsafeMutablePointer<Double>) {
            for r in rows {
                let row = z + (r &- rows.lowerBound) &* k
                var m = -Float.infinity, arg = 0
                for j in 0..<k {
                    let v = row[j] + bias[j]
                    row[j] = v
                    if v > m { m = v; arg = j }
                }
                var s = 0.0
                for j in 0..<k { s += exp(Double(row[j] - m)) }
                let lse = Double(m) + log(s)
                let y = Int(labels[r])
                let w = weights.map { $0[r] } ?? uniform
                out[0] += w * (lse - Double(row[y]))
                if arg == y { out[1] += 1 }
                if gradient {
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

    private func withRows<R>(_ body: (RowData) -> R) -> R {
        let uniform = 1.0 / Double(max(matrix.rows, 1))
        return labels.withUnsafeBufferPointer { lab in
            withRowWeights { body(RowData(labels: lab.baseAddress!, weights: $0, uniform: uniform)) }
        }
    }

    private func withRowWeights<R>(_ body: (UnsafePointer<Double>?) -> R) -> R {
        guard let rowWeights else { return body(nil) }
        return rowWeights.withUnsafeBufferPointer { body($0.baseAddress) }
    }
}
