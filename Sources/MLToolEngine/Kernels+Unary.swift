import MLToolCore

extension Reference {
    /// y = f(x) elementwise, f the step's `UnaryFunction` with its α (Core ML's thresholded ReLU, ELU, softplus,
    /// unary functions, MIL's elementwise ops). Rare in image networks: the fast path runs this same loop.
    static func unary(_ s: Step, _ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, count n: Int) {
        guard let f = s.unary else { y.update(from: x, count: n); return }   // compile sets it
        let (a, b) = (s.alpha, s.beta)
        for i in 0..<n { y[i] = f.apply(x[i], alpha: a, beta: b) }
    }
}
