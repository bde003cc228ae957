import Foundation
import MLToolCore

/// Plain scalar kernels, one per op, written for clarity: the definition the fast path is tested against.
/// Inputs `x[i]` have shapes `xs[i]`; the output `y` has shape `ys` (already inferred and validated).
enum Reference {
    static func run(_ s: Step, _ x: [UnsafePointer<Float>], _ xs: [[Int]], _ y: UnsafeMutablePointer<Float>, _ ys: [Int]) {
        let n = ys.reduce(1, *)
        if n == 0 { return }   // an empty output (e.g. a batch of 0): nothing to compute
        switch s.op {
        case .conv: conv(s, x[0], xs[0], y, ys)
        case .convTranspose: convTranspose(s, x[0], xs[0], y, ys)
        case .dense:
            let (rows, k, m) = (xs[0][0], s.weightShape[0], s.weightShape[1])
            gemm(x[0], s.weight!.pointer, y, rows: rows, k: k, n: m, bias: s.bias?.pointer, act: s.act)
        case .matMul:
            let k = xs[1][0], m = xs[1][1]
            gemm(x[0], x[1], y, rows: n / m, k: k, n: m, bias: s.bias?.pointer, act: .none)
        case .batchMatMul: batchMatMul(x, xs, y, ys)
        case .batchNorm:
            let c = s.weightShape[0]
            for i in 0..<n { y[i] = x[0][i] * s.weight!.pointer[i % c] + s.bias!.pointer[i % c] }
        case .relu, .clip, .leakyRelu, .sigmoid, .hardSigmoid, .hardSwish, .swish, .tanh, .identity:
            for i in 0..<n { y[i] = s.act.apply(x[0][i]) }
        case .softmax: softmax(s, x[0], xs[0], y)
        case .layerNorm: layerNorm(s, x[0], xs[0], y)
        case .add, .sub, .mul, .div, .pow: binary(s, x[0], xs[0], x[1], xs[1], y, ys)
        case .maxPool, .avgPool: pool(s, x[0], xs[0], y, ys)
        case .globalAvgPool, .globalMaxPool:
            let (b, hw, c) = (xs[0][0], xs[0][1] * xs[0][2], xs[0][3])
            for i in 0..<b {
                for ch in 0..<c {
                    var acc: Float = s.op == .globalMaxPool ? -.infinity : 0
                    for p in 0..<hw {
                        let v = x[0][(i * hw + p) * c + ch]
                        acc = s.op == .globalMaxPool ? max(acc, v) : acc + v
                    }
                    y[i * c + ch] = s.op == .globalMaxPool ? acc : acc / Float(hw)
                }
            }
        case .concat:
            let ax = try! Program.axis(s.axis ?? 0, rank: ys.count, s)   // validated by shape inference
            let outer = ys[..<ax].reduce(1, *), inner = ys[(ax + 1)...].reduce(1, *)
            var offset = 0
            for (p, sh) in zip(x, xs) {
                let run = sh[ax] * inner
                for o in 0..<outer {
                    for j in 0..<run { y[o * ys[ax] * inner + offset + j] = p[o * run + j] }
                }
                offset += run
            }
        case .reshape, .flatten, .squeeze, .unsqueeze:
            y.update(from: x[0], count: n)
        case .transpose:
            let perm = s.perm ?? Array((0..<xs[0].count).reversed())
            let inStrides = strides(xs[0])
            for i in 0..<n {
                let idx = unravel(i, ys)
                var src = 0
                for d in 0..<ys.count { src += idx[d] * inStrides[perm[d]] }
                y[i] = x[0][src]
            }
        case .pad: pad(s, x[0], xs[0], y, ys)
        case .unary: unary(s, x[0], y, count: n)
        case .resize: resize(s, x[0], xs[0], y, ys)
        case .slice: slice(s, x[0], xs[0], y, ys)
        case .topK: topK(s, x[0], xs[0], y, ys)
        case .binary: binary(s, x[0], xs[0], x[1], xs[1], y, ys)
        case .where: select(x, xs, y, ys)
        case .quantize, .dequantize: linearQuant(s, x[0], xs[0], y)
        case .ifElse:   // the condition has one element; with a plan-time one, only the chosen branch was computed
            y.update(from: x[s.chosen ?? (x[0][0] != 0 ? 1 : 2)], count: n)
        case .reduce: reduce(s, x[0], xs[0], y, ys)
        case .argMax: argMax(s, x[0], xs[0], y)
        case .logSoftmax, .hardmax: logSoftmaxOrHardmax(s, x[0], xs[0], y)
        case .gather: gather(s, x[0], xs[0], x[1], n: xs[1].reduce(1, *), y)
        case .lstm, .gru, .rnn: recurrent(s, x, xs, y, ys)
        case .shape: shape(s, xs[0], y)
        case .expand: expand(x[0], xs[0], y, ys)
        }
    }

    static func strides(_ shape: [Int]) -> [Int] {
        var st = [Int](repeating: 1, count: shape.count)
        for d in stride(from: shape.count - 2, through: 0, by: -1) { st[d] = st[d + 1] * shape[d + 1] }
        return st
    }

    static func unravel(_ i: Int, _ shape: [Int]) -> [Int] {
        var idx = [Int](repeating: 0, count: shape.count), r = i
        for d in stride(from: shape.count - 1, through: 0, by: -1) { idx[d] = r % shape[d]; r /= shape[d] }
        return idx
    }

    /// y (rows, n) = act(a (rows, k) · b (k, n) + bias).
    static func gemm(_ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>,
                     rows: Int, k: Int, n: Int, bias: UnsafePointer<Float>?, act: Act) {
        for r in 0..<rows {
            for c in 0..<n {
                var acc: Float = bias?[c] ?? 0
                for i in 0..<k { acc += a[r * k + i] * b[i * n + c] }
                y[r * n + c] = act.apply(acc)
            }
        }
    }

    // x (N,H,W,C), w (KH,KW,C/groups,OC) → y (N,OH,OW,OC)
    static func conv(_ s: Step, _ x: UnsafePointer<Float>, _ xs: [Int], _ y: UnsafeMutablePointer<Float>, _ ys: [Int]) {
        let (h, w, c) = (xs[1], xs[2], xs[3])
        let (kh, kw, cg, oc) = (s.weightShape[0], s.weightShape[1], s.weightShape[2], s.weightShape[3])
        let ocg = oc / s.groups
        let wt = s.weight!.pointer
        for b in 0..<ys[0] {
            for oy in 0..<ys[1] {
                for ox in 0..<ys[2] {
                    for o in 0..<oc {
                        let g = o / ocg
                        var acc: Float = s.bias?.pointer[o] ?? 0
                        for ky in 0..<kh {
                            let iy = oy * s.strides[0] - s.pads[0] + ky * s.dilations[0]
                            if iy < 0 || iy >= h { continue }
                            for kx in 0..<kw {
                                let ix = ox * s.strides[1] - s.pads[1] + kx * s.dilations[1]
                                if ix < 0 || ix >= w { continue }
                                for ci in 0..<cg {
                                    acc += x[((b * h + iy) * w + ix) * c + g * cg + ci] * wt[((ky * kw + kx) * cg + ci) * oc + o]
                                }
                            }
                        }
                        y[((b * ys[1] + oy) * ys[2] + ox) * oc + o] = s.act.apply(acc)
                    }
                }
            }
        }
    }

    static func softmax(_ s: Step, _ x: UnsafePointer<Float>, _ xs: [Int], _ y: UnsafeMutablePointer<Float>) {
        let ax = try! Program.axis(s.axis ?? -1, rank: xs.count, s)   // validated by shape inference
        let outer = xs[..<ax].reduce(1, *), len = xs[ax], inner = xs[(ax + 1)...].reduce(1, *)
        for o in 0..<outer {
            for i in 0..<inner {
                let at = { (j: Int) in (o * len + j) * inner + i }
                var m = -Float.infinity
                for j in 0..<len { m = max(m, x[at(j)]) }
                var sum: Double = 0   // a float sum loses a long peaked row's small terms
                for j in 0..<len { let e = exp(x[at(j)] - m); y[at(j)] = e; sum += Double(e) }
                let total = Float(sum)
                for j in 0..<len { y[at(j)] /= total }
            }
        }
    }

    static func binary(_ s: Step, _ a: UnsafePointer<Float>, _ aShape: [Int], _ b: UnsafePointer<Float>, _ bShape: [Int],
                       _ y: UnsafeMutablePointer<Float>, _ ys: [Int]) {
        // Broadcast strides: 0 along axes where the operand has size 1 (or is missing).
        func bstrides(_ sh: [Int]) -> [Int] {
            let padded = [Int](repeating: 1, count: ys.count - sh.count) + sh
            let st = strides(padded)
            return padded.indices.map { padded[$0] == 1 ? 0 : st[$0] }
        }
        let sa = bstrides(aShape), sb = bstrides(bShape)
        for i in 0..<ys.reduce(1, *) {
            let idx = unravel(i, ys)
            var ia = 0, ib = 0
            for d in 0..<ys.count { ia += idx[d] * sa[d]; ib += idx[d] * sb[d] }
            let v: Float
            switch s.op {
            case .add: v = a[ia] + b[ib]
            case .sub: v = a[ia] - b[ib]
            case .mul: v = a[ia] * b[ib]
            case .pow: v = Foundation.pow(a[ia], b[ib])
            case .binary: v = (s.binary ?? .max).apply(a[ia], b[ib])   // compile sets the function
            default: v = a[ia] / b[ib]
            }
            y[i] = s.act.apply(v)
        }
    }

    // x (N,H,W,C) → y (N,OH,OW,C); window taps `dilations` apart. avgPool's divisor counts the taps in the padding
    // when countIncludePad (but never those past it, which ceil mode adds); otherwise only the input cells.
    static func pool(_ s: Step, _ x: UnsafePointer<Float>, _ xs: [Int], _ y: UnsafeMutablePointer<Float>, _ ys: [Int]) {
        let (h, w, c) = (xs[1], xs[2], xs[3])
        let (dh, dw) = (s.dilations[0], s.dilations[1])
        for b in 0..<ys[0] {
            for oy in 0..<ys[1] {
                for ox in 0..<ys[2] {
                    let y0 = oy * s.strides[0] - s.pads[0], x0 = ox * s.strides[1] - s.pads[1]
                    let rows = (0..<s.kernel[0]).map { y0 + $0 * dh }, cols = (0..<s.kernel[1]).map { x0 + $0 * dw }
                    let padded = rows.filter { $0 < h + s.pads[2] }.count * cols.filter { $0 < w + s.pads[3] }.count
                    for ch in 0..<c {
                        var acc: Float = s.op == .maxPool ? -.infinity : 0
                        var count = 0
                        for iy in rows where iy >= 0 && iy < h {
                            for ix in cols where ix >= 0 && ix < w {
                                let v = x[((b * h + iy) * w + ix) * c + ch]
                                acc = s.op == .maxPool ? max(acc, v) : acc + v
                                count += 1
                            }
                        }
                        if s.op == .avgPool { acc /= Float(s.countIncludePad ? padded : max(count, 1)) }
                        y[((b * ys[1] + oy) * ys[2] + ox) * c + ch] = acc
                    }
                }
            }
        }
    }

    static func pad(_ s: Step, _ x: UnsafePointer<Float>, _ xs: [Int], _ y: UnsafeMutablePointer<Float>, _ ys: [Int]) {
        let r = xs.count
        let st = strides(xs)
        for i in 0..<ys.reduce(1, *) {
            let idx = unravel(i, ys)
            var src = 0, inside = true
            for d in 0..<r {
                var p = idx[d] - s.pads[d]
                if p < 0 || p >= xs[d] {
                    switch s.padMode {
                    case "reflect": p = p < 0 ? -p : 2 * (xs[d] - 1) - p
                    case "edge": p = p < 0 ? 0 : xs[d] - 1
                    default: inside = false
                    }
                }
                src += p * st[d]
            }
            y[i] = inside ? x[src] : s.value
        }
    }
}
