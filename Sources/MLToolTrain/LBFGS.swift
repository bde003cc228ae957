import Dispatch
import MLToolCore

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

/// Elements per task of the vector operations below, a multiple of their 512-element summation blocks: each
/// element and each block is computed the same way however the tasks are spread, so results do not depend on the
/// thread count. Vectors of at most one chunk run on the calling thread. (p = 3M parameters, 2 cores: the two-loop
/// recursion and line search ran at memory speed on one core, about 30 ms of an L-BFGS iteration.)
let vectorChunk = 1 << 16
let sumBlock = 512

/// Calls `body` with consecutive ranges of at most `vectorChunk` covering 0..<n, in parallel when there are several.
func forEachChunk(_ n: Int, _ body: @Sendable (Range<Int>) -> Void) {
    let chunks = (n + vectorChunk - 1) / vectorChunk
    guard chunks > 1 else { body(0..<n); return }
    DispatchQueue.concurrentPerform(iterations: chunks) { c in
        body(c &* vectorChunk..<min((c &+ 1) &* vectorChunk, n))
    }
}

/// Σ block(i, end) over the 512-element blocks [i, end) of 0..<n, the blocks computed in parallel (`forEachChunk`)
/// and added in order in Double.
func sumOfBlocks(_ n: Int, _ block: @Sendable (Int, Int) -> Double) -> Double {
    let blocks = (n + sumBlock - 1) / sumBlock
    let partial = UnsafeMutablePointer<Double>.allocate(capacity: max(blocks, 1))
    defer { partial.deallocate() }
    let out = SharedPointer(p: partial)
    forEachChunk(n) { r in
        var i = r.lowerBound
        while i < r.upperBound {
            let end = min(i &+ sumBlock, r.upperBound)
            out.p[i / sumBlock] = block(i, end)
            i = end
        }
    }
    var total = 0.0
    for b in 0..<blocks { total += partial[b] }
    return total
}

/// y += a·x, then z·y (0 without z) summed like `dot`, in one pass.
func axpyThenDot(_ a: Double, _ x: [Float], _ y: inout [Float], _ z: [Float]?) -> Double {
    guard let z else { axpy(a, x, &y); return 0 }
    let af = Float(a)
    return x.withUnsafeBufferPointer { px in
        z.withUnsafeBufferPointer { pz in
            y.withUnsafeMutableBufferPointer { py in
                let n = min(px.count, py.count, pz.count)
                guard n > 0, let x0 = px.baseAddress, let y0 = py.baseAddress, let z0 = pz.baseAddress else {
                    return 0
                }
                let xs = SharedPointer(p: UnsafeMutablePointer(mutating: x0)), ys = SharedPointer(p: y0)
                let zs = SharedPointer(p: UnsafeMutablePointer(mutating: z0))
                let a8 = SIMD8<Float>(repeating: af)
                return sumOfBlocks(n) { start, end in
                    let xp = xs.p, yp = ys.p, zp = zs.p
                    var acc = SIMD8<Float>()
                    var i = start
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
                    return block
                }
            }
        }
    }
}

/// Σ aᵢbᵢ: Float SIMD lanes within blocks of 512, blocks summed in Double, always in the same order.
func dot(_ a: [Float], _ b: [Float]) -> Double {
    a.withUnsafeBufferPointer { pa in
        b.withUnsafeBufferPointer { pb in
            let n = min(pa.count, pb.count)
            guard n > 0, let a0 = pa.baseAddress, let b0 = pb.baseAddress else { return 0 }
            let xs = SharedPointer(p: UnsafeMutablePointer(mutating: a0))
            let ys = SharedPointer(p: UnsafeMutablePointer(mutating: b0))
            return sumOfBlocks(n) { start, end in
                let x = xs.p, y = ys.p
                var acc = SIMD8<Float>()
                var i = start
                while i &+ 8 <= end {
                    let u = UnsafeRawPointer(x + i).loadUnaligned(as: SIMD8<Float>.self)
                    let v = UnsafeRawPointer(y + i).loadUnaligned(as: SIMD8<Float>.self)
                    acc = acc + u * v
                    i &+= 8
                }
                var block = Double(acc.sum())
                while i < end { block += Double(x[i]) * Double(y[i]); i &+= 1 }
                return block
            }
        }
    }
}

/// out = x + a·d elementwise (out may be x itself).
private func addScaled(_ x: UnsafePointer<Float>, _ a: Float, _ d: UnsafePointer<Float>,
                       into out: UnsafeMutablePointer<Float>, count n: Int) {
    let xs = SharedPointer(p: UnsafeMutablePointer(mutating: x)), ds = SharedPointer(p: UnsafeMutablePointer(mutating: d))
    let os = SharedPointer(p: out)
    forEachChunk(n) { r in
        let x = xs.p, d = ds.p, o = os.p
        for i in r { o[i] = x[i] + a * d[i] }
    }
}

/// y += a·x.
func axpy(_ a: Double, _ x: [Float], _ y: inout [Float]) {
    let af = Float(a)
    x.withUnsafeBufferPointer { px in
        y.withUnsafeMutableBufferPointer { py in
            let n = min(px.count, py.count)
            guard n > 0, let x0 = px.baseAddress, let y0 = py.baseAddress else { return }
            addScaled(y0, af, x0, into: y0, count: n)
        }
    }
}

/// x *= a.
func scale(_ x: inout [Float], _ a: Double) {
    let af = Float(a)
    x.withUnsafeMutableBufferPointer { p in
        guard let base = p.baseAddress else { return }
        let xs = SharedPointer(p: base)
        forEachChunk(p.count) { r in
            let x = xs.p
            for i in r { x[i] *= af }
        }
    }
}

/// a − b, elementwise.
func difference(_ a: [Float], _ b: [Float]) -> [Float] {
    [Float](unsafeUninitializedCapacity: min(a.count, b.count)) { out, count in
        let n = min(a.count, b.count)
        a.withUnsafeBufferPointer { pa in
            b.withUnsafeBufferPointer { pb in
                guard n > 0, let a0 = pa.baseAddress, let b0 = pb.baseAddress, let o0 = out.baseAddress else { return }
                let xs = SharedPointer(p: UnsafeMutablePointer(mutating: a0))
                let ys = SharedPointer(p: UnsafeMutablePointer(mutating: b0)), os = SharedPointer(p: o0)
                forEachChunk(n) { r in
                    let x = xs.p, y = ys.p, o = os.p
                    for i in r { o[i] = x[i] - y[i] }
                }
            }
        }
        count = n
    }
}

/// x + a·d, elementwise (the trial point of a line search).
func moved(_ x: [Float], _ a: Double, _ d: [Float]) -> [Float] {
    let n = min(x.count, d.count)
    guard n == x.count else { var out = x; axpy(a, d, &out); return out }
    return [Float](unsafeUninitializedCapacity: n) { out, count in
        x.withUnsafeBufferPointer { px in
            d.withUnsafeBufferPointer { pd in
                guard n > 0, let x0 = px.baseAddress, let d0 = pd.baseAddress, let o0 = out.baseAddress else { return }
                addScaled(x0, Float(a), d0, into: o0, count: n)
            }
        }
        count = n
    }
}

/// max |xᵢ| (NaNs are skipped).
func maxAbs(_ x: [Float]) -> Double {
    x.withUnsafeBufferPointer { p in
        guard let base = p.baseAddress else { return 0 }
        let chunks = max(1, (p.count + vectorChunk - 1) / vectorChunk)
        let partial = UnsafeMutablePointer<Int32>.allocate(capacity: chunks)
        defer { partial.deallocate() }
        partial.initialize(repeating: 0, count: chunks)
        let xs = SharedPointer(p: UnsafeMutableRawPointer(mutating: base).assumingMemoryBound(to: Int32.self))
        let out = SharedPointer(p: partial)
        // On sign-cleared bit patterns: integer order is the order of |x|, and NaNs are the patterns above ∞, which
        // (∞ − v) >> 31 masks to 0 without a comparison (SIMD masks are scalarised on the baseline target).
        let magnitude: Int32 = 0x7FFF_FFFF, infinity: Int32 = 0x7F80_0000
        forEachChunk(p.count) { r in
            let bits = xs.p
            var m8 = SIMD8<Int32>()
            var i = r.lowerBound
            while i &+ 8 <= r.upperBound {
                let v = UnsafeRawPointer(bits + i).loadUnaligned(as: SIMD8<Int32>.self) & magnitude
                m8 = pointwiseMax(m8, v & ~((infinity &- v) &>> 31))
                i &+= 8
            }
            var m = m8.max()
            while i < r.upperBound {
                let v = bits[i] & magnitude
                if v <= infinity { m = max(m, v) }
                i &+= 1
            }
            out.p[r.lowerBound / vectorChunk] = m
        }
        var m: Int32 = 0
        for c in 0..<chunks { m = max(m, partial[c]) }
        return Double(Float(bitPattern: UInt32(m)))
    }
}
