import COpenBLAS

/// Rows of features that the softmax objective multiplies by the weights, a block of rows at a time. Conformers are
/// views valid only inside the `withUnsafe…` scope that made them.
protocol FeatureMatrix: Sendable {
    /// Whether `SoftmaxObjective` should run forward, softmax and gradient product block by block, each group of
    /// rows into its own partial gradient (dense rows: the block stays in cache), rather than `forward` over all
    /// rows, then `transposedProduct` (sparse rows).
    static var fusesRowBlocks: Bool { get }
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

/// A dense n × d row-major matrix; the products are OpenBLAS `sgemm` calls (single-threaded: the objective runs
/// row groups in parallel). Sendable: a read-only view, shared by the tasks of one call.
struct DenseRows: FeatureMatrix, @unchecked Sendable {
    static var fusesRowBlocks: Bool { true }
    let base: UnsafePointer<Float>
    let rows: Int
    let cols: Int

    func forward(rows r: Range<Int>, weights: UnsafePointer<Float>, classes: Int,
                 into out: UnsafeMutablePointer<Float>) {
        guard !r.isEmpty else { return }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Int32(r.count), Int32(classes), Int32(cols),
                    1, base + r.lowerBound &* cols, Int32(cols), weights, Int32(classes), 0, out, Int32(classes))
    }

    func accumulateTransposed(rows r: Range<Int>, g: UnsafePointer<Float>, classes: Int,
                              into grad: UnsafeMutablePointer<Float>) {
        guard !r.isEmpty else { return }
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Int32(cols), Int32(classes), Int32(r.count),
                    1, base + r.lowerBound &* cols, Int32(cols), g, Int32(classes), 1, grad, Int32(classes))
    }

    func transposedProduct(g: UnsafePointer<Float>, classes: Int, into grad: UnsafeMutablePointer<Float>) {
        grad.initialize(repeating: 0, count: cols &* classes)
        accumulateTransposed(rows: 0..<rows, g: g, classes: classes, into: grad)
    }
}
