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

    /// −H·g, with H₀ = γI, γ = sᵀy / yᵀy of the newest pair (plain −g when empty).
    func direction(_ g: [Float]) -> [Float] {
        var q = g
        var alpha = [Double](repeating: 0, count: s.count)
        for i in stride(from: s.count - 1, through: 0, by: -1) {
            alpha[i] = rho[i] * dot(s[i], q)
            axpy(-alpha[i], y[i], &q)
        }
        if let ls = s.last, let ly = y.last {
            let gamma = dot(ls, ly) / dot(ly, ly)
            scale(&q, gamma)
        }
        for i in 0..<s.count {
            let beta = rho[i] * dot(y[i], q)
            axpy(alpha[i] - beta, s[i], &q)
        }
        scale(&q, -1)
        return q
    }
}

/// Σ aᵢbᵢ accumulated in Double, in index order.
func dot(_ a: [Float], _ b: [Float]) -> Double {
    a.withUnsafeBufferPointer { pa in
        b.withUnsafeBufferPointer { pb in
            let n = min(pa.count, pb.count)
            // Four fixed lanes: vectorisable, and the order never depends on anything but n.
            var s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
            var i = 0
            while i &+ 4 <= n {
                s0 += Double(pa[i]) * Double(pb[i]); s1 += Double(pa[i &+ 1]) * Double(pb[i &+ 1])
                s2 += Double(pa[i &+ 2]) * Double(pb[i &+ 2]); s3 += Double(pa[i &+ 3]) * Double(pb[i &+ 3])
                i &+= 4
            }
            while i < n { s0 += Double(pa[i]) * Double(pb[i]); i &+= 1 }
            return (s0 + s1) + (s2 + s3)
        }
    }
}

/// y += a·x.
func axpy(_ a: Double, _ x: [Float], _ y: inout [Float]) {
    x.withUnsafeBufferPointer { px in
        y.withUnsafeMutableBufferPointer { py in
            for i in 0..<min(px.count, py.count) { py[i] = Float(Double(py[i]) + a * Double(px[i])) }
        }
    }
}

func scale(_ x: inout [Float], _ a: Double) {
    x.withUnsafeMutableBufferPointer { p in for i in 0..<p.count { p[i] = Float(Double(p[i]) * a) } }
}

/// max |xᵢ|.
func maxAbs(_ x: [Float]) -> Double {
    var m: Float = 0
    for v in x { m = max(m, abs(v)) }
    return Double(m)
}
