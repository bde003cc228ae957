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
    /// quantize with mode "dynamic": one uint8 pair computed from the input when it runs (`dynamicParameters`), the
    /// codes dequantized again; `scales` and `zeroPoints` hold a placeholder pair.
    var dynamic = false

    /// Largest |code| accepted: every code and every difference of two is then exact in float32.
    static let maxCode = 1 << 22

    init(_ node: Node) throws {
        let a = node.attributes
        func bad(_ attribute: String, _ expected: String, _ actual: String) -> EngineError {
            .invalidAttribute(node: node.name, attribute: attribute, expected: expected, actual: actual)
        }
        if node.op == .quantize, a.mode == "dynamic" {
            guard a.quantScales == nil, a.quantZeroPoints == nil, a.axis == nil else {
                throw bad("quantScales", "none (mode dynamic computes one pair when it runs)", "\(a.quantScales ?? []), axis \(a.axis.map(String.init) ?? "none")")
            }
            guard (a.min ?? 0) == 0, (a.max ?? 255) == 255 else {
                throw bad("min/max", "0…255 (mode dynamic gives uint8 codes)", "\(a.min ?? 0)…\(a.max ?? 255)")
            }
            (scales, zeroPoints, lo, hi, values, dynamic) = ([1], [0], 0, 255, true, true)
            return
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
        default: throw bad("mode", "codes, values or dynamic", a.mode ?? "")
        }
    }

    /// DynamicQuantizeLinear's scale and zero point of `n` values, one at a time: the definition in docs/FORMAT.md
    /// (`mlk_dynamic_quant_params` is the fast one).
    static func dynamicParameters(_ x: UnsafePointer<Float>, count n: Int) -> (scale: Float, zeroPoint: Float) {
        var lo: Float = 0, hi: Float = 0
        for i in 0..<n {
            if x[i] < lo { lo = x[i] }
            if x[i] > hi { hi = x[i] }
        }
        let scale: Float = hi == lo ? 1 : (hi - lo) / 255
        let z = Swift.min(Swift.max(0 - lo / scale, 0), 255)
        return (scale, z.rounded(.toNearestOrEven))
    }

    /// This node's (scale, zero point) pairs for an input of `n` values at `x`: the computed pair in mode "dynamic"
    /// (`fast`: by `mlk_dynamic_quant_params`), else the node's own.
    func pairs(_ x: UnsafePointer<Float>, count n: Int, fast: Bool) -> (scales: [Float], zeroPoints: [Float]) {
        guard dynamic else { return (scales, zeroPoints) }
        if !fast {
            let p = Self.dynamicParameters(x, count: n)
            return ([p.scale], [p.zeroPoint])
        }
        var scale: Float = 1, zp: Int32 = 0
        mlk_dynamic_quant_params(x, Int64(n), &scale, &zp)
        return ([scale], [Float(zp)])
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
        let p = q.pairs(x, count: outer &* channels &* inner, fast: false)
        var i = 0
        for _ in 0..<outer {
            for c in 0..<channels {
                let (scale, zp) = (p.scales[c], p.zeroPoints[c])
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
        let total = outer &* channels &* inner
        let p = q.pairs(x, count: total, fast: true)
        let run: @Sendable (Int, Int, Int) -> Void = { at, n, c in
            if dequantize {
                mlk_dequantize_linear(x + at, y + at, Int64(n), p.scales[c], p.zeroPoints[c])
            } else {
                mlk_quantize_linear(x + at, y + at, Int64(n), p.scales[c], p.zeroPoints[c], q.lo, q.hi, q.values ? 1 : 0)
            }
        }
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
    /// the quantized ONNX file, not a second, 7-bit quantization per row. When such a layer's one reader is another
    /// such `quantize` (no activation, not a graph output), it requantizes its sums to that quantize's codes as
    /// onnxruntime's QLinearConv does (`QuantizedWeights.requantizeOutput`, `QuantizedDepthwise`) and takes that
    /// quantize's place.
    mutating func readInputCodes() {
        let readers = readersOfValues()
        let outputIds = Set(outputs.compactMap { ids[$0] })
        var absorbed: [Int: Int] = [:]   // requantizing step → the quantize step reading it
        for s in steps where s.qweights != nil || s.qdepthwise != nil {
            guard var v = s.inputs.first else { continue }
            while let p = producer[v], Self.valuePreserving.contains(steps[p].op), let next = steps[p].inputs.first { v = next }
            guard let p = producer[v], steps[p].op == .quantize, let q = steps[p].linearQuant, q.values, !q.dynamic, q.axis == nil,
                  q.scales.count == 1, q.hi - q.lo <= 255, q.lo == 0 || q.lo == -128 else { continue }
            s.qweights?.readInputCodes(scale: q.scales[0], zeroPoint: Int32(q.zeroPoints[0] - q.lo))
            guard s.act.code == Act.none.code, !outputIds.contains(s.output), let r = readers[s.output], r.count == 1,
                  steps[r[0]].op == .quantize, steps[r[0]].inputs.first == s.output, let out = steps[r[0]].linearQuant,
                  out.values, out.axis == nil, out.scales.count == 1 else { continue }
            let bias = s.bias.map { UnsafePointer($0.pointer) }
            let requantized = s.qweights?.requantizeOutput(bias: bias, scale: out.scales[0], zeroPoint: out.zeroPoints[0],
                                                           lo: out.lo, hi: out.hi)
                ?? s.qdepthwise?.requantize(inputScale: q.scales[0], bias: bias, taps: s.kernel.reduce(1, &*),
                                            scale: out.scales[0], zeroPoint: out.zeroPoints[0], lo: out.lo, hi: out.hi)
            if requantized == true, let i = producer[s.output] { absorbed[i] = r[0] }
        }
        readDynamicCodes(outputs: outputIds)
        // Not where a depthwise conv on float weights would then read the layer directly: the plan would fuse the two
        // (`Fused`), whose GEMM does not requantize; the quantize stays between them.
        absorbed = absorbed.filter { _, j in
            !(readers[steps[j].output] ?? []).contains { steps[$0].op == .conv && steps[$0].groups > 1 && steps[$0].qdepthwise?.run == nil }
        }
        // A requantizing layer writes what its quantize gives (the same bits): that step goes, and the layer writes
        // the quantize's output (its own, which only the quantize read, is no longer computed).
        guard !absorbed.isEmpty else { return }
        for (i, j) in absorbed {
            steps[i].output = steps[j].output
            // A depthwise conv on the integers no longer needs its float weights (nor takes the float band fusion,
            // `Fused.fusable`, which would run it on them).
            if steps[i].qdepthwise != nil { steps[i].weight = nil }
        }
        dropSteps(Set(absorbed.values))
    }

    /// A requantizing layer's output (`readInputCodes`) that only int8 layers read, each directly as codes of the
    /// same scale and zero point — a 1×1 conv with k a multiple of 4, or a requantizing depthwise conv — and that is
    /// no graph output, is stored as its 8-bit codes: the producer writes bytes (`writesCodes`), the readers take them
    /// in place (`readsStoredCodes`, `QuantizedDepthwise.storedInput`), and no float copy is written, read, or
    /// quantized again. The place the plan gives the value (sized in floats) holds the bytes from its start. The same
    /// codes as the float path, so the same outputs, bit for bit.
    mutating func storeCodes() {
        var readers: [Int: [Int]] = [:]
        for (i, s) in steps.enumerated() {
            for v in s.inputs { readers[v, default: []].append(i) }
        }
        let outputIds = Set(outputs.compactMap { ids[$0] })
        for s in steps {
            guard let out = s.qweights?.outputCodes ?? s.qdepthwise?.outputCodes, !outputIds.contains(s.output),
                  let r = readers[s.output], !r.isEmpty,
                  r.allSatisfy({ j in
                      let t = steps[j]
                      guard t.op == .conv, t.inputs == [s.output] else { return false }
                      if let d = t.qdepthwise, d.run != nil { return d.run?.inputScale == out.scale }
                      guard let w = t.qweights, t.groups == 1, Fast.readsInputDirectly(t), let c = w.inputCodes else { return false }
                      return c.scale == out.scale && c.zeroPoint == out.zeroPoint && !w.readsDynamicCodes
                          && Int(mlk_qrow_bytes(Int64(w.k))) == w.k
                  }) else { continue }
            for j in r {
                let ok = steps[j].qdepthwise?.readStoredCodes(scale: out.scale, zeroPoint: out.zeroPoint)
                    ?? steps[j].qweights?.readStoredCodes(scale: out.scale, zeroPoint: out.zeroPoint)
                precondition(ok == true, "'\(steps[j].name)': checked above")
            }
            _ = s.qweights?.storeOutputCodes() ?? s.qdepthwise?.storeOutputCodes()
        }
    }

    /// Int8 layers reading a `quantize` in mode "dynamic" directly read its input instead and quantize it themselves
    /// with the pair it would compute (`QuantizedWeights.readDynamicCodes`), where their weights allow exact sums; a
    /// dynamic quantize no step reads any more (nor the graph's outputs) goes.
    mutating func readDynamicCodes(outputs: Set<Int>) {
        var absorbed = false
        for i in steps.indices {
            guard let w = steps[i].qweights, let v = steps[i].inputs.first, let p = producer[v], steps[p].op == .quantize,
                  steps[p].linearQuant?.dynamic == true, let x = steps[p].inputs.first, w.readDynamicCodes() else { continue }
            steps[i].inputs[0] = x
            absorbed = true
        }
        guard absorbed else { return }
        let read = Set(steps.flatMap(\.inputs)).union(outputs)
        steps = steps.filter { !($0.op == .quantize && $0.linearQuant?.dynamic == true && !read.contains($0.output)) }
        producer = [:]
        for (i, s) in steps.enumerated() { producer[s.output] = i }
    }

    /// Conv, dense and matMul nodes whose input is the output of a per-tensor `quantize` in mode "values" (through
    /// value-preserving ops) or directly of one in mode "dynamic" (`dynamic`): a QDQ file's layers and a dynamically
    /// quantized file's, which run on the int8 kernels whatever their size where their weights allow exact sums
    /// (`Program.quantized`), since the file states integer arithmetic.
    static func codeReaders(_ graph: Graph) -> (codes: Set<String>, dynamic: Set<String>) {
        var producer: [String: Node] = [:]
        for n in graph.nodes {
            for o in n.outputs { producer[o] = n }
        }
        var readers = Set<String>(), dynamic = Set<String>()
        for n in graph.nodes where n.op == .conv || n.op == .dense || n.op == .matMul {
            guard var v = n.inputs.first else { continue }
            if let p = producer[v], p.op == .quantize, p.attributes.mode == "dynamic" {
                readers.insert(n.name)
                dynamic.insert(n.name)
                continue
            }
            // Bounded: a malformed graph with a cycle of reshapes does not loop here (compile reports it).
            var hops = 0
            while let p = producer[v], valuePreserving.contains(p.op), let next = p.inputs.first, hops < graph.nodes.count {
                v = next
                hops += 1
            }
            guard let p = producer[v], p.op == .quantize, p.attributes.mode == "values", p.attributes.axis == nil,
                  p.attributes.quantScales?.count == 1 else { continue }
            readers.insert(n.name)
        }
        return (readers, dynamic)
    }
}
