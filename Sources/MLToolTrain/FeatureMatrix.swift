import COpenBLAS

/// Rows of features that the softmax objective multiplies by the weights, a block of rows at a time. Conformers are
/// views valid only inside the `withUnsafe…` scope that made them. Dense conformers are also `DenseBlockSource`s,
/// which the objective runs block by block (forward, softmax and gradient product on one cache-sized block).
protocol FeatureMatrix: Sendable {
    var rows: Int { get }
    var cols: Int { get }
    /// out (count × k) = X[rows] (count × cols) · W (cols × k, row-major).
    func forward(rows: Range<Int>, weights: UnsafePointer<Float>, classes: Int, into out: UnsafeMutablePointer<Float>)
    /// grad (cols × k) += X[rows]ᵀ · g, with g (count × k). Must sum in an order that does not depend on threads.
    func accumulateTransposed(rows: Range<Int>, g: UnsafePointer<Float>, classes: Int,
                              into grad: UnsafeMutablePointer<Float>)
    /// grad (cols × k) = Xᵀ · g over all rows, with g (rows × k); each element summed from 0 in row order.
    func transposedProduct(g: UnsafePointer<Float>, classes: Int, into grad: UnsafeMutablePointer<Float>)
}

/// Dense rows that can hand out a block of consecutive rows as a row-major `count × cols` buffer: a view into
/// memory (`DenseRows`) or the rows read from a file into the caller's scratch buffer (`FileRows`, out of core).
/// The products of a block are the same `sgemm` calls either way, so both give the same bits.
protocol DenseBlockSource: FeatureMatrix {
    /// Calls `body` with rows `r` as a `r.count × cols` row-major block; `scratch` has room for that many values.
    func withBlock(rows r: Range<Int>, scratch: UnsafeMutablePointer<Float>, _ body: (UnsafePointer<Float>) -> Void)
}

/// The products of dense row blocks, shared by every `DenseBlockSource`: OpenBLAS `sgemm` calls (single-threaded:
/// the objective runs row groups in parallel).
enum DenseBlock {
    /// out (count × k) = block (count × cols) · W (cols × k).
    static func forward(_ block: UnsafePointer<Float>, count: Int, cols: Int, weights: UnsafePointer<Float>,
                        classes: Int, into out: UnsafeMutablePointer<Float>) {
        guard count > 0 else { return }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Int32(count), Int32(classes), Int32(cols),
                    1, block, Int32(cols), weights, Int32(classes), 0, out, Int32(classes))
    }

    /// grad (cols × k) += blockᵀ · g, with g (count × k).
    static func accumulateTransposed(_ block: UnsafePointer<Float>, count: Int, cols: Int, g: UnsafePointer<Float>,
                                     classes: Int, into grad: UnsafeMutablePointer<Float>) {
        guard count > 0 else { return }
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Int32(cols), Int32(classes), Int32(count),
                    1, block, Int32(cols), g, Int32(classes), 1, grad, Int32(classes))
    }
}

extension DenseBlockSource {
    /// Rows per block of the `FeatureMatrix` products below (a few MiB of scratch at most).
    static var productBlockRows: Int { 256 }

    func forward(rows r: Range<Int>, weights: UnsafePointer<Float>, classes: Int, into out: UnsafeMutablePointer<Float>) {
        eachBlock(r) { s, block in
            DenseBlock.forward(block, count: s.count, cols: cols, weights: weights, classes: classes,
                               into: out + (s.lowerBound &- r.lowerBound) &* classes)
        }
    }

    func accumulateTransposed(rows r: Range<Int>, g: UnsafePointer<Float>, classes: Int,
                              into grad: UnsafeMutablePointer<Float>) {
        eachBlock(r) { s, block in
            DenseBlock.accumulateTransposed(block, count: s.count, cols: cols,
                                            g: g + (s.lowerBound &- r.lowerBound) &* classes, classes: classes,
                                            into: grad)
        }
    }

    func transposedProduct(g: UnsafePointer<Float>, classes: Int, into grad: UnsafeMutablePointer<Float>) {
        grad.initialize(repeating: 0, count: cols &* classes)
        accumulateTransposed(rows: 0..<rows, g: g, classes: classes, into: grad)
    }

    /// Calls `body` on consecutive blocks of at most `productBlockRows` rows of `r`, in order.
    private func eachBlock(_ r: Range<Int>, _ body: (Range<Int>, UnsafePointer<Float>) -> Void) {
        guard !r.isEmpty else { return }
        let step = Self.productBlockRows
        let scratch = UnsafeMutablePointer<Float>.allocate(capacity: min(step, r.count) &* cols)
        defer { scratch.deallocate() }
        var s = r.lowerBound
        while s < r.upperBound {
            let e = min(s &+ step, r.upperBound)
            withBlock(rows: s..<e, scratch: scratch) { body(s..<e, $0) }
            s = e
        }
    }
}

/// A dense n × d row-major matrix in memory. Sendable: a read-only view, shared by the tasks of one call.
struct DenseRows: DenseBlockSource, @unchecked Sendable {
    let base: UnsafePointer<Float>
    let rows: Int
    let cols: Int

    func withBlock(rows r: Range<Int>, scratch: UnsafeMutablePointer<Float>, _ body: (UnsafePointer<Float>) -> Void) {
        body(base + r.lowerBound &* cols)
    }

    // One product over all the rows (no blocks): what `LogisticRegressionModel.logits` calls.
    func forward(rows r: Range<Int>, weights: UnsafePointer<Float>, classes: Int, into out: UnsafeMutablePointer<Float>) {
        DenseBlock.forward(base + r.lowerBound &* cols, count: r.count, cols: cols, weights: weights, classes: classes,
                           into: out)
    }
}
