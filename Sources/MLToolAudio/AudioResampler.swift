import Foundation
/// A polyphase windowed-sinc resampler: `from` Hz → `to` Hz by up = to/g, down = from/g (g their gcd), with the
/// low-pass filter scipy's `resample_poly` designs (a Kaiser-windowed sinc, β = 5, cutoff 1/max(up, down) of Nyquist,
/// 2·10·max(up, down) + 1 taps, unit gain at DC, times `up`) and its alignment: output m is
///
///     y[m] = Σₙ x[n] · h[m·down + half − n·up]      (x is 0 outside the clip; ⌈N·up/down⌉ outputs)
///
/// `resample` runs it as `up` short filters (one per phase, reversed, over a zero-padded copy of x: a plain dot
/// product per output, in SIMD8); `resampleReference` is the sum above, term by term.
public struct AudioResampler: Sendable {
    public let from: Int
    public let to: Int
    public let up: Int
    public let down: Int
    /// The prototype filter, 2·half + 1 taps.
    let taps: [Float]
    let half: Int
    /// taps[p], taps[p + up], … reversed, one array per phase p, each `phaseLength` long (zeros past the end).
    let phases: [[Float]]
    let phaseLength: Int

    /// The Kaiser window's β, as scipy's default for `resample_poly`.
    static let kaiserBeta = 5.0

    public init(from: Int, to: Int) throws {
        guard from >= 1 else { throw AudioError.invalidRate(what: "resampling from", value: from) }
        guard to >= 1 else { throw AudioError.invalidRate(what: "resampling to", value: to) }
        self.from = from
        self.to = to
        let g = Self.gcd(from, to)
        up = to / g
        down = from / g
        let rate = max(up, down)
        half = 10 * rate
        taps = Self.lowPass(count: 2 * half + 1, cutoff: 1 / Double(rate), gain: Double(up))
        let (h, u) = (taps, up)
        let length = (h.count + u - 1) / u
        phaseLength = length
        phases = (0..<u).map { p in
            var f = [Float](repeating: 0, count: length)
            var j = 0
            while p + j * u < h.count { f[length - 1 - j] = h[p + j * u]; j += 1 }
            return f
        }
    }

    /// The number of outputs for `count` inputs: ⌈count·up/down⌉.
    public func outputCount(_ count: Int) -> Int {
        let (n, o) = count.multipliedReportingOverflow(by: up)
        return o ? Int.max : n / down + (n % down == 0 ? 0 : 1)
    }

    /// `x` at `to` Hz (the same array when the rates are equal).
    public func resample(_ x: [Float]) -> [Float] {
        guard up != 1 || down != 1 else { return x }
        let count = outputCount(x.count)
        // x with phaseLength zeros on each side: output m's window starts at n0 = (m·down + half − p)/up − (L − 1),
        // which is ≥ −(L − 1) ≥ −L, and ends at most at (count·down + half)/up < x.count + L.
        let pad = phaseLength
        var padded = [Float](repeating: 0, count: x.count + 2 * pad)
        padded.withUnsafeMutableBufferPointer { p in
            x.withUnsafeBufferPointer { p.baseAddress!.advanced(by: pad).update(from: $0.baseAddress!, count: x.count) }
        }
        var y = [Float](repeating: 0, count: count)
        padded.withUnsafeBufferPointer { xp in
            y.withUnsafeMutableBufferPointer { yp in
                for m in 0..<count {
                    let t = m &* down &+ half
                    let p = t % up
                    let start = (t - p) / up - (phaseLength - 1) + pad
                    phases[p].withUnsafeBufferPointer { f in
                        yp[m] = Self.dot(f.baseAddress!, xp.baseAddress!.advanced(by: start), phaseLength)
                    }
                }
            }
        }
        return y
    }

    /// The defining sum, one term at a time (the reference `resample` is tested against).
    public func resampleReference(_ x: [Float]) -> [Float] {
        guard up != 1 || down != 1 else { return x }
        return (0..<outputCount(x.count)).map { m in
            let t = m * down + half
            var acc: Float = 0
            for n in 0..<x.count {
                let k = t - n * up
                if k >= 0 && k < taps.count { acc += x[n] * taps[k] }
            }
            return acc
        }
    }

    /// Σ a[i]·b[i] over `n` floats, eight lanes at a time.
    @inline(__always)
    static func dot(_ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, _ n: Int) -> Float {
        var acc = SIMD8<Float>()
        var i = 0
        while i &+ 8 <= n {
            let va = UnsafeRawPointer(a.advanced(by: i)).loadUnaligned(as: SIMD8<Float>.self)
            let vb = UnsafeRawPointer(b.advanced(by: i)).loadUnaligned(as: SIMD8<Float>.self)
            acc += va * vb
            i &+= 8
        }
        var s = acc.sum()
        while i < n { s += a[i] * b[i]; i &+= 1 }
        return s
    }

    /// scipy's `firwin(count, cutoff, window=("kaiser", β))` times `gain`: sinc(cutoff·(n − c))·cutoff times a
    /// symmetric Kaiser window, scaled to sum 1 (unit gain at DC), in Double, rounded once to Float.
    static func lowPass(count: Int, cutoff: Double, gain: Double) -> [Float] {
        let centre = Double(count - 1) / 2
        let i0Beta = besselI0(kaiserBeta)
        var h = (0..<count).map { n -> Double in
            let m = Double(n) - centre
            let x = cutoff * m
            let sinc = x == 0 ? 1 : sin(Double.pi * x) / (Double.pi * x)
            let r = count > 1 ? 2 * Double(n) / Double(count - 1) - 1 : 0
            let window = besselI0(kaiserBeta * (max(0, 1 - r * r)).squareRoot()) / i0Beta
            return cutoff * sinc * window
        }
        let sum = h.reduce(0, +)
        for i in h.indices { h[i] *= gain / sum }
        return h.map { Float($0) }
    }

    /// The modified Bessel function of the first kind, order 0: Σ ((x/2)^k / k!)², to double precision.
    static func besselI0(_ x: Double) -> Double {
        var sum = 1.0, term = 1.0, k = 1.0
        let q = x * x / 4
        while term > 1e-17 * sum {
            term *= q / (k * k)
            sum += term
            k += 1
        }
        return sum
    }

    static func gcd(_ a: Int, _ b: Int) -> Int { b == 0 ? a : gcd(b, a % b) }
}
