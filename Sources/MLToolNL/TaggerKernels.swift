/// The tagger's inner loop: a word's emission scores, the sum of its feature rows. `weights` is rows × t
/// row-major and MUST hold 8 more values after the last row (the fast path reads whole 8-lane blocks and drops the
/// lanes past t). Sums run over the rows in list order in every lane, so the fast path and the reference give the
/// same bits.
enum TaggerKernels {
    /// out[y] = Σ_j w[rows[j] · t + y] for y < t (plain loops).
    static func emissionsReference<S: DecoderScore>(_ w: UnsafePointer<S>, t: Int, rows: UnsafePointer<Int32>,
                                                   count: Int, out: UnsafeMutablePointer<S>) {
        for y in 0..<t { out[y] = .zero }
        for j in 0..<count {
            let row = w + Int(rows[j]) * t
            for y in 0..<t { out[y] = out[y].adding(row[y]) }
        }
    }

    /// The same, 8 lanes at a time, with the sums kept in registers (up to 32 tags in one pass over the rows).
    @inline(__always)
    static func emissions<S: DecoderScore>(_ w: UnsafePointer<S>, t: Int, rows: UnsafePointer<Int32>, count: Int,
                                           out: UnsafeMutablePointer<S>) {
        let raw = UnsafeRawPointer(w)
        let stride = MemoryLayout<S>.stride
        var block = 0
        while block < t {
            let width = min(t &- block, 32)
            var a0 = SIMD8<S>(), a1 = SIMD8<S>(), a2 = SIMD8<S>(), a3 = SIMD8<S>()
            var j = 0
            while j < count {
                let base = (Int(rows[j]) &* t &+ block) &* stride
                a0 = S.add(a0, raw.loadUnaligned(fromByteOffset: base, as: SIMD8<S>.self))
                if width > 8 { a1 = S.add(a1, raw.loadUnaligned(fromByteOffset: base &+ 8 &* stride, as: SIMD8<S>.self)) }
                if width > 16 { a2 = S.add(a2, raw.loadUnaligned(fromByteOffset: base &+ 16 &* stride, as: SIMD8<S>.self)) }
                if width > 24 { a3 = S.add(a3, raw.loadUnaligned(fromByteOffset: base &+ 24 &* stride, as: SIMD8<S>.self)) }
                j &+= 1
            }
            var y = 0
            while y < width {
                let lane = y & 7
                switch y >> 3 {
                case 0: out[block &+ y] = a0[lane]
                case 1: out[block &+ y] = a1[lane]
                case 2: out[block &+ y] = a2[lane]
                default: out[block &+ y] = a3[lane]
                }
                y &+= 1
            }
            block &+= 32
        }
    }
}

/// Scores the decoder and the kernels add: Int32 during training (wrapping, exact), Float in a trained model.
protocol DecoderScore: SIMDScalar, Comparable, Hashable, Codable, BitwiseCopyable {
    static var zero: Self { get }
    func adding(_ other: Self) -> Self
    static func add(_ a: SIMD8<Self>, _ b: SIMD8<Self>) -> SIMD8<Self>
}

extension Int32: DecoderScore {
    @inline(__always) func adding(_ other: Int32) -> Int32 { self &+ other }
    @inline(__always) static func add(_ a: SIMD8<Int32>, _ b: SIMD8<Int32>) -> SIMD8<Int32> { a &+ b }
}

extension Float: DecoderScore {
    @inline(__always) func adding(_ other: Float) -> Float { self + other }
    @inline(__always) static func add(_ a: SIMD8<Float>, _ b: SIMD8<Float>) -> SIMD8<Float> { a + b }
}
