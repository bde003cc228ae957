/// Limited-memory BFGS: the last `capacity` correction pairs (s, y) and the two-loop recursion that turns a gradient
/// into a quasi-Newton direction. Vectors are Float (memory is 2·capacity·p floats); inner products are Double.
struct LBFGSMemory {
    let capacity: Int
    private var s: [[Float]] = []
    private var y: [[Float]] = []
    private var rho: [Double] = []

    init(capacity: Int) { self.capacity = max(1, capacity) }

    var isEmpty: Bool { s.isEmpty }

    mutating func reset() { s.removeAll(); y.removeAll(); rho.removeAll() }

    /// Keeps the pair when it has positive curvature (sᵀy > 0); returns whether it was kept.
    @discardableResult
    mutating func push(s newS: [Float], y newY: [Float]) -> Bool {
        let sy = dot(newS, newY), yy = dot(newY, newY)
        guard sy > 1e-12 * yy, sy.isFinite, yy > 0 else { return false }
        if s.count == capacity { s.removeFirst(); y.removeFirst(); rho.removeFirst() }
        s.append(newS); y.append(newY); rho.append(1 / sy)
        return true
    }

    /// −H·g, with H₀ = γI, γ = sᵀy / yᵀy of the newest pair (plain −g when empty). Each update of q or r is fused
    /// with the inner product the next step needs, so the recursion makes 2m + 2 passes over p floats, not 4m.
    func direction(_ g: [Float]) -> [Float] {
        var q = g
        let m = s.count
        guard m > 0 else { scale(&q, -1); return q }
        var alpha = [Double](repeating: 0, count: m)
        var sq = dot(s[m - 1], q)
        for i in stride(from: m - 1, through: 0, by: -1) {
            alpha[i] = rho[i] * sq
            sq = axpyThenDot(-alpha[i], y[i], &q, i > 0 ? s[i - 1] : nil)
        }
        scale(&q, dot(s[m - 1], y[m - 1]) / dot(y[m - 1], y[m - 1]))
        var yr = dot(y[0], q)
        for i in 0..<m {
            let beta = rho[i] * yr
            yr = axpyThenDot(alpha[i] - beta, s[i], &q, i + 1 < m ? y[i + 1] : nil)
        }
        scale(&q, -1)
        return q
    }
}

/// y += a·x, then z·y (0 without z) summed like `dot`, in one pass.
func axpyThenDot(_ a: Double, _ x: [Float], _ y: inout [Float], _ z: [Float]?) -> Double {
    guard let z else { axpy(a, x, &y); return 0 }
    let af = Float(a)
    return x.withUnsafeBufferPointer { px in
        z.withUnsafeBufferPointer { pz in
            y.withUnsafeMutableBufferPointer { py in
                let n = min(px.count, py.count, pz.count)
                guard n > 0, let xp = px.baseAddress, let yp = py.baseAddress, let zp = pz.baseAddress else {
                    return 0
                }
                let a8 = SIMD8<Float>(repeating: af)
                var total = 0.0
                var i = 0
                while i < n {
                    let end = min(i &+ 512, n)
                    var acc = SIMD8<Float>()
                    while i &+ 8 <= end {
                        let xv = UnsafeRawPointer(xp + i).loadUnaligned(as: SIMD8<Float>.self)
                        var yv = UnsafeRawPointer(yp + i).loadUnaligned(as: SIMD8<Float>.self)
                        yv = yv + a8 * xv
                        UnsafeMutableRawPointer(yp + i).storeBytes(of: yv, as: SIMD8<Float>.self)
                        acc = acc + UnsafeRawPointer(zp + i).loadUnaligned(as: SIMD8<Float>.self) * yv
                        i &+= 8
                    }
                    var block = Double(acc.sum())
                    while i < end {
                        yp[i] += af * xp[i]
                        block += Double(zp[i]) * Double(yp[i])
                        i &+= 1
                    }
                    total += block
                }
                return total
            }
        }
    }
}

/// Σ aᵢbᵢ: Float SIMD lanes within blocks of 512, blocks summed in Double, always in the same order.
func dot(_ a: [Float], _ b: [Float]) -> Double {
    a.withUnsafeBufferPointer { pa in
        b.withUnsafeBufferPointer { pb in
            let n = min(pa.count, pb.count)
            guard n > 0, let x = pa.baseAddress, let y = pb.baseAddress else { return 0 }
            var total = 0.0
            var i = 0
            while i < n {
                let end = min(i &+ 512, n)
                var acc = SIMD8<Float>()
                while i &+ 8 <= end {
                    let u = UnsafeRawPointer(x + i).loadUnaligned(as: SIMD8<Float>.self)
                    let v = UnsafeRawPointer(y + i).loadUnaligned(as: SIMD8<Float>.self)
                    acc = acc + u * v
                    i &+= 8
                }
                var block = Double(acc.sum())
                while i < end { block += Double(x[i]) * Double(y[i]); i &+= 1 }
                total += block
            }
            return total
        }
    }
}

/// y += a·x.
func axpy(_ a: Double, _ x: [Float], _ y: inout [Float]) {
    let af = Float(a)
    x.withUnsafeBufferPointer { px in
        y.withUnsafeMutableBufferPointer { py in
            for i in 0..<min(px.count, py.count) { py[i] += af * px[i] }
        }
    }
}

/// x *= a.
func scale(_ x: inout [Float], _ a: Double) {
    let af = Float(a)
    x.withUnsafeMutableBufferPointer { p in for i in 0..<p.count { p[i] *= af } }
}

/// a − b, elementwise.
func difference(_ a: [Float], _ b: [Float]) -> [Float] {
    [Float](unsafeUninitializedCapacity: a.count) { out, count in
        a.withUnsafeBufferPointer { pa in
            b.withUnsafeBufferPointer { pb in for i in 0..<min(pa.count, pb.count) { out[i] = pa[i] - pb[i] } }
        }
        count = min(a.count, b.count)
    }
}

/// x + a·d, elementwise (the trial point of a line search).
func moved(_ x: [Float], _ a: Double, _ d: [Float]) -> [Float] {
    var out = x
    axpy(a, d, &out)
    return out
}

/// max |xᵢ|.
func maxAbs(_ x: [Float]) -> Double {
    x.withUnsafeBufferPointer { p in
        var m: Float = 0
        for v in p { m = max(m, abs(v)) }
        return Double(m)
    }
}
