import CMLToolKernels
import MLToolCore

/// quantize, dequantize (ONNX QuantizeLinear / DequantizeLinear on computed tensors, docs/FORMAT.md): the node's
/// parameters, checked once at compile.
struct LinearQuant: Sendable {
    /// The axis the scales run along (resolved against the input's rank at run time), nil for one pair.
    var axis: Int?
    var scales: [Float]
    /// Integers, as floats (exact: |zero point| < 2^22).
    var zeroPoints: [Float]
    /// quantize: the code range.
    var lo: Float = 0, hi: Float = 0
    /// quantize with mode "values": the codes dequantized again.
    var values = false

    /// Largest |code| accepted: every code and every difference of two is then exact in float32.
    static let maxCode = 1 << 22

    init(_ node: Node) throws {
        let a = node.attributes
        func bad(_ attribute: String, _ expected: String, _ actual: String) -> EngineError {
            .invalidAttribute(node: node.name, attribute: attribute, expected: expected, actual: actual)
        }
        guard let s = a.quantScales, !s.isEmpty, s.allSatisfy({ $0.isFinite && $0 != 0 }) else {
            throw bad("quantScales", "finite non-zero scales", "\(a.quantScales ?? [])")
        }
        let z = a.quantZeroPoints ?? [Int](repeating: 0, count: s.count)
        guard z.count == s.count, z.allSatisfy({ abs($0) < Self.maxCode }) else {
            throw bad("quantZeroPoints", "\(s.count) integers in ±2^22 (one per scale)", "\(z)")
        }
        guard a.axis != nil || s.count == 1 else { throw bad("quantScales", "one value without an axis", "\(s.count) values") }
        (axis, scales, zeroPoints) = (a.axis, s, z.map(Float.init))
        guard node.op == .quantize else { return }
        guard let lo = a.min, let hi = a.max, lo <= hi, lo.rounded() == lo, hi.rounded() == hi,
              abs(lo) < Float(Self.maxCode), abs(hi) < Float(Self.maxCode),
              zeroPoints.allSatisfy({ $0 >= lo && $0 <= hi }) else {
            throw bad("min/max", "an integer code range holding every zero point \(z)", "\(a.min.map { "\($0)" } ?? "none")…\(a.max.map { "\($0)" } ?? "none")")
        }
        (self.lo, self.hi) = (lo, hi)
        switch a.mode {
        case nil, "codes"?: values = false
        case "values"?: values = true
        default: throw bad("mode", "codes or values", a.mode ?? "")
        }
    }

    /// (outer, channels, inner) of a tensor of `shape` around the axis; nil when the scales do not fit it.
    func split(_ shape: [Int], _ s: Step) throws -> (outer: Int, channels: Int, inner: Int) {
        guard let axis else { return (shape.reduce(1, &*), 1, 1) }
        let ax = try Program.axis(axis, rank: shape.count, s)
        guard shape[ax] == scales.count else {
            throw EngineError.shapeMismatch(node: s.name, what: "input", expected: "\(scales.count) values along axis \(ax) (one per scale)",
                                            actual: shape)
        }
        return (shape[..<ax].reduce(1, &*), shape[ax], shape[(ax + 1)...].reduce(1, &*))
    }
}

extension Reference {
    /// quantize / dequantize, one value at a time: the definition in docs/FORMAT.md.
    static func linearQuant(_ s: Step, _ x: UnsafePointer<Float>, _ xs: [Int], _ y: UnsafeMutablePointer<Float>) {
        guard let q = s.linearQuant, let (outer, channels, inner) = try? q.split(xs, s) else { return }   // checked by shape inference
        var i = 0
        for _ in 0..<outer {
            for c in 0..<channels {
                let (scale, zp) = (q.scales[c], q.zeroPoints[c])
                for _ in 0..<inner {
                    if s.op == .dequantize {
                        y[i] = (x[i] - zp) * scale
                    } else {
                        let r = (x[i] / scale).rounded(.toNearestOrEven)
                        let code = r.isNaN ? zp : Swift.min(Swift.max(r + zp, q.lo), q.hi)
                        y[i] = q.values ? (code - zp) * scale : code
                    }
                    i += 1
                }
            }
        }
    }
}

extension Fast {
    /// quantize / dequantize: `mlk_quantize_linear` over runs of one channel (the whole tensor when per tensor),
    /// rows split across threads when large.
    static func linearQuant(_ s: Step, _ x: UnsafePointer<Float>, _ xs: [Int], _ y: UnsafeMutablePointer<Float>, threads: Int) {
        guard let q = s.linearQuant, let (outer, channels, inner) = try? q.split(xs, s) else { return }   // checked by shape inference
        nonisolated(unsafe) let (x, y) = (x, y)
        let dequantize = s.op == .dequantize
        let run: @Sendable (Int, Int, Int) -> Void = { at, n, c in
            if dequantize {
                mlk_dequantize_linear(x + at, y + at, Int64(n), q.scales[c], q.zeroPoints[c])
            } else {
                mlk_quantize_linear(x + at, y + at, Int64(n), q.scales[c], q.zeroPoints[c], q.lo, q.hi, q.values ? 1 : 0)
            }
        }
        let total = outer &* channels &* inner
        if channels == 1 {
            // One pair for everything: chunks of at least 4,096 values.
            let chunk = 4096, chunks = (total &+ chunk &- 1) / chunk
            rowsInParallel(chunks, elements: total, threads: threads) { lo, hi in
                let start = lo &* chunk
                run(start, Swift.min(hi &* chunk, total) &- start, 0)
            }
        } else if inner == 1 {
            // Per channel along the last axis (NHWC channels): one value per run, so the scalar reference per row.
            rowsInParallel(outer, elements: total, threads: threads) { lo, hi in
                for r in lo..<hi {
                    for c in 0..<channels { run(r &* channels &+ c, 1, c) }
                }
            }
        } else {
            rowsInParallel(outer &* channels, elements: total, threads: threads) { lo, hi in
                for r in lo..<hi { run(r &* inner, inner, r % channels) }
            }
        }
    }
}

extension Program {
    /// Ops that pass values through unchanged (a quantized tensor's codes with them).
    static let valuePreserving: Set<Op> = [.reshape, .flatten, .squeeze, .unsqueeze, .identity]

    /// Int8 layers whose input is the output of a per-tensor `quantize` in mode "values" with 8-bit codes (possibly
    /// through reshapes) read that tensor as its codes (`QuantizedWeights.readInputCodes`): the integer arithmetic of
    /// the quantized ONNX file, not a second, 7-bit quantization per row.
    mutating func readInputCodes() {
        for s in steps {
            guard let w = s.qweights, var v = s.inputs.first else { continue }
            while let p = producer[v], Self.valuePreserving.contains(steps[p].op), let next = steps[p].inputs.first { v = next }
            guard let p = producer[v], steps[p].op == .quantize, let q = steps[p].linearQuant, q.values, q.axis == nil,
                  q.scales.count == 1, q.hi - q.lo <= 255, q.lo == 0 || q.lo == -128 else { continue }
            w.readInputCodes(scale: q.scales[0], zeroPoint: Int32(q.zeroPoints[0] - q.lo))
        }
    }
}
