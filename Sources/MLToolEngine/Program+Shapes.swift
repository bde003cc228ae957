import MLToolCore

extension Program {
    /// Shapes of every value the given steps touch, from the input shapes; throws naming the first node that does
    /// not fit.
    func shapes(inputs: [Int: [Int]], steps order: [Int], targets: [Int]? = nil) throws -> [Int: [Int]] {
        try resolve(inputs: inputs, steps: order, targets: targets).shapes
    }

    /// The distinct, non-negative axes a `reduce` step reduces (every axis when it lists none).
    static func reducedAxes(_ s: Step, rank: Int) throws -> [Int] {
        guard let listed = s.axes else { return Array(0..<rank) }
        let axes = try listed.map { try axis($0, rank: rank, s) }
        guard Set(axes).count == axes.count else {
            throw EngineError.invalidAttribute(node: s.name, attribute: "axes", expected: "distinct axes", actual: "\(listed)")
        }
        return axes
    }

    /// Normalizes a possibly negative axis for `rank`.
    static func axis(_ a: Int, rank: Int, _ s: Step) throws -> Int {
        let r = a < 0 ? a + rank : a
        guard r >= 0, r < rank else {
            throw EngineError.invalidAttribute(node: s.name, attribute: "axis", expected: "in -\(rank)..<\(rank)", actual: "\(a)")
        }
        return r
    }

    /// Whether `shape` has no negative dimension and every product of its dimensions fits in an Int (zero
    /// dimensions counted as 1).
    static func fits(_ shape: [Int]) -> Bool {
        var n = 1
        for d in shape {
            guard d >= 0, case let (p, overflow) = n.multipliedReportingOverflow(by: max(d, 1)), !overflow else { return false }
            n = p
        }
        return true
    }

    /// Output size of a sliding window along one axis; 0 when no window fits or the sizes, pads and kernel of a
    /// file overflow (the callers then report the shape).
    static func windowCount(_ size: Int, k: Int, stride: Int, dilation: Int, padBegin: Int, padEnd: Int, ceil: Bool) -> Int {
        guard size >= 0, k >= 1, stride >= 1, dilation >= 1, padBegin >= 0, padEnd >= 0,
              case let (padded, o1) = size.addingReportingOverflow(padBegin), !o1,
              case let (total, o2) = padded.addingReportingOverflow(padEnd), !o2,
              case let (reach, o3) = dilation.multipliedReportingOverflow(by: k - 1), !o3 else { return 0 }
        let span = total - reach - 1   // both terms ≥ 0: cannot overflow
        if span < 0 { return 0 }
        guard case let (up, o4) = span.addingReportingOverflow(ceil ? stride - 1 : 0), !o4 else { return 0 }
        var n = up / stride + 1
        // A window must start inside the input or the leading padding (ONNX/PyTorch ceil-mode rule).
        if ceil, (n - 1).multipliedReportingOverflow(by: stride).partialValue >= padded { n -= 1 }
        return n
    }

    /// Output size of a transposed convolution along one axis: (size − 1)·stride + (k − 1)·dilation + 1 − pads +
    /// extra; 0 when it is not positive or overflows (the callers then report the shape).
    static func transposedCount(_ size: Int, k: Int, stride: Int, dilation: Int, padBegin: Int, padEnd: Int, extra: Int) -> Int {
        guard size >= 1, k >= 1, case let (a, o1) = (size - 1).multipliedReportingOverflow(by: stride), !o1,
              case let (b, o2) = (k - 1).multipliedReportingOverflow(by: dilation), !o2,
              case let (c, o3) = a.addingReportingOverflow(b), !o3,
              case let (d, o4) = c.addingReportingOverflow(1 + extra), !o4 else { return 0 }
        // Pads and extra are at most `maxExtent` each (Program.compile): no overflow below.
        return max(0, d - padBegin - padEnd)
    }

    /// The broadcast of two shapes (numpy rules), or nil.
    static func broadcast(_ a: [Int], _ b: [Int]) -> [Int]? {
        let r = max(a.count, b.count)
        var out = [Int](repeating: 1, count: r)
        for i in 0..<r {
            let x = i < r - a.count ? 1 : a[i - (r - a.count)]
            let y = i < r - b.count ? 1 : b[i - (r - b.count)]
            guard x == y || x == 1 || y == 1 else { return nil }
            out[i] = x == 1 ? y : x
        }
        return out
    }

    /// The shape of a step's output from its inputs' shapes; the ops with more than a line or two of rules each have
    /// their own function below.
    static func outputShape(_ s: Step, _ ins: [[Int]]) throws -> [Int] {
        let x = ins[0]
        switch s.op {
        case .conv: return try convShape(s, x)
        case .convTranspose: return try convTransposeShape(s, x)
        case .maxPool, .avgPool: return try poolShape(s, x)
        case .globalAvgPool, .globalMaxPool:
            guard x.count == 4 else { throw s.shapeError("input", "(N,H,W,C)", x) }
            return [x[0], 1, 1, x[3]]
        case .dense:
            guard x.count >= 2, x.dropFirst().reduce(1, *) == s.weightShape[0] else {
                throw s.shapeError("input", "(N, …) with \(s.weightShape[0]) values per item", x)
            }
            return [x[0], s.weightShape[1]]
        case .matMul:
            let b = ins.count > 1 ? ins[1] : s.weightShape   // a constant b packed at compile time
            guard b.count == 2, x.count >= 2, x.last == b[0] else { throw s.shapeError("a", "(…, M, \(b.first ?? 0)) with b (K, N) rank 2 \(b)", x) }
            return x.dropLast() + [b[1]]
        case .batchMatMul:
            guard let out = batchMatMulShape(x, ins[1]) else { throw s.shapeError("b", "(…, \(x.last ?? 0), N) against a \(x), batch axes broadcastable", ins[1]) }
            return out
        case .batchNorm:
            guard x.last == s.weightShape[0] else { throw s.shapeError("input", "last axis \(s.weightShape[0])", x) }
            return x
        case .relu, .clip, .leakyRelu, .sigmoid, .hardSigmoid, .hardSwish, .swish, .tanh, .identity, .unary:
            return x
        case .softmax:
            _ = try axis(s.axis ?? -1, rank: x.count, s)
            return x
        case .layerNorm: return try layerNormShape(s, x)
        case .add, .sub, .mul, .div, .pow, .binary:
            guard let out = broadcast(x, ins[1]) else { throw s.shapeError("second input", "broadcastable with \(x)", ins[1]) }
            return out
        case .where:
            guard let ab = broadcast(ins[1], ins[2]), let out = broadcast(x, ab) else {
                throw s.shapeError("condition", "broadcastable with a \(ins[1]) and b \(ins[2])", x)
            }
            return out
        case .ifElse: return try ifElseShape(s, x, ins)
        case .quantize, .dequantize:
            _ = try s.linearQuant?.split(x, s)
            return x
        case .reduce:
            var out = x
            for a in try reducedAxes(s, rank: x.count) { out[a] = 1 }
            return out
        case .argMax, .logSoftmax, .hardmax: return try argMaxShape(s, x)
        case .topK: return try topKShape(s, x)
        case .gather:
            let ax = try axis(s.axis ?? 0, rank: x.count, s)
            return Array(x[..<ax]) + ins[1] + Array(x[(ax + 1)...])
        case .concat: return try concatShape(s, x, ins)
        case .reshape: return try reshapeShape(s, x)
        case .flatten: return try flattenShape(s, x)
        case .transpose: return try transposeShape(s, x)
        case .squeeze: return try squeezeShape(s, x)
        case .unsqueeze: return try unsqueezeShape(s, x)
        case .resize: return try resizeShape(s, x)
        case .slice: return try sliceShape(s, x)
        case .shape: return try shapeShape(s, x)
        case .expand:
            guard let out = broadcast(x, s.shape) else { throw s.shapeError("input", "broadcastable with the target \(s.shape)", x) }
            return out
        case .lstm, .gru, .rnn:
            guard let r = s.recurrent else { throw s.shapeError("input", "a compiled recurrent layer", x) }
            return try r.outputShape(s, ins)
        case .pad: return try padShape(s, x)
        }
    }

    private static func convShape(_ s: Step, _ x: [Int]) throws -> [Int] {
        let w = s.weightShape
        guard x.count == 4, x[3] == w[2] * s.groups else { throw s.shapeError("input", "(N,H,W,\(w[2] * s.groups))", x) }
        let oh = windowCount(x[1], k: w[0], stride: s.strides[0], dilation: s.dilations[0], padBegin: s.pads[0], padEnd: s.pads[2], ceil: false)
        let ow = windowCount(x[2], k: w[1], stride: s.strides[1], dilation: s.dilations[1], padBegin: s.pads[1], padEnd: s.pads[3], ceil: false)
        guard oh > 0, ow > 0 else { throw s.shapeError("input", "at least the dilated kernel \(w[0])×\(w[1]) after padding", x) }
        return [x[0], oh, ow, w[3]]
    }

    private static func convTransposeShape(_ s: Step, _ x: [Int]) throws -> [Int] {
        let w = s.weightShape
        guard x.count == 4, x[3] == w[0] else { throw s.shapeError("input", "(N,H,W,\(w[0]))", x) }
        let oh = transposedCount(x[1], k: w[1], stride: s.strides[0], dilation: s.dilations[0], padBegin: s.pads[0], padEnd: s.pads[2], extra: s.outputPadding[0])
        let ow = transposedCount(x[2], k: w[2], stride: s.strides[1], dilation: s.dilations[1], padBegin: s.pads[1], padEnd: s.pads[3], extra: s.outputPadding[1])
        guard oh > 0, ow > 0 else { throw s.shapeError("input", "a non-empty output after removing pads \(s.pads)", x) }
        return [x[0], oh, ow, w[3] &* s.groups]
    }

    private static func layerNormShape(_ s: Step, _ x: [Int]) throws -> [Int] {
        let ax = try axis(s.axis ?? -1, rank: x.count, s)
        if let c = s.weightShape.first, x[ax...].reduce(1, &*) != c {
            throw s.shapeError("input", "\(c) values along axes \(ax)… (the scale's)", x)
        }
        return s.statistic == nil ? x : Array(x[..<ax]) + [Int](repeating: 1, count: x.count - ax)
    }

    private static func ifElseShape(_ s: Step, _ x: [Int], _ ins: [[Int]]) throws -> [Int] {
        guard x.reduce(1, &*) == 1 else { throw s.shapeError("condition", "one element", x) }
        if let c = s.chosen { return ins[c] }   // a plan-time condition: the other branch never runs
        guard ins.count == 3 else {
            throw EngineError.invalidAttribute(node: s.name, attribute: "condition", expected: "a value known when planning (the graph holds one branch only)",
                                               actual: "a value computed at run time")
        }
        guard ins[1] == ins[2] else {
            throw EngineError.invalidAttribute(node: s.name, attribute: "If branches",
                                               expected: "one shape (the condition is only known at run time)",
                                               actual: "shapes \(ins[1]) and \(ins[2])")
        }
        return ins[1]
    }

    private static func argMaxShape(_ s: Step, _ x: [Int]) throws -> [Int] {
        let ax = try axis(s.axis ?? -1, rank: x.count, s)
        guard s.op != .argMax else {
            guard x[ax] > 0 else { throw s.shapeError("input", "at least one element along axis \(ax)", x) }
            var out = x
            out[ax] = 1
            return out
        }
        return x
    }

    private static func poolShape(_ s: Step, _ x: [Int]) throws -> [Int] {
        guard x.count == 4 else { throw s.shapeError("input", "(N,H,W,C)", x) }
        // The window spans (kernel - 1) · dilation + 1 cells; padding must leave each window a real cell.
        let span = (0..<2).map { (s.kernel[$0] - 1).multipliedReportingOverflow(by: s.dilations[$0]).partialValue + 1 }
        guard s.pads[0] < span[0], s.pads[2] < span[0], s.pads[1] < span[1], s.pads[3] < span[1] else {
            throw EngineError.invalidAttribute(node: s.name, attribute: "pads", expected: "smaller than the window \(span)", actual: "\(s.pads)")
        }
        let oh = windowCount(x[1], k: s.kernel[0], stride: s.strides[0], dilation: s.dilations[0], padBegin: s.pads[0], padEnd: s.pads[2], ceil: s.ceilMode)
        let ow = windowCount(x[2], k: s.kernel[1], stride: s.strides[1], dilation: s.dilations[1], padBegin: s.pads[1], padEnd: s.pads[3], ceil: s.ceilMode)
        guard oh > 0, ow > 0 else { throw s.shapeError("input", "at least the kernel \(s.kernel) after padding", x) }
        return [x[0], oh, ow, x[3]]
    }

    private static func concatShape(_ s: Step, _ x: [Int], _ ins: [[Int]]) throws -> [Int] {
        let ax = try axis(s.axis ?? 0, rank: x.count, s)
        var out = x
        for other in ins.dropFirst() {
            guard other.count == x.count, (0..<x.count).allSatisfy({ $0 == ax || other[$0] == x[$0] }) else {
                throw s.shapeError("input", "\(x) except axis \(ax)", other)
            }
            guard case let (sum, overflow) = out[ax].addingReportingOverflow(other[ax]), !overflow else {
                throw s.shapeError("input", "a total along axis \(ax) that fits", other)
            }
            out[ax] = sum
        }
        return out
    }

    private static func reshapeShape(_ s: Step, _ x: [Int]) throws -> [Int] {
        var out = s.shape, known = 1, infer: Int?
        for (i, d) in out.enumerated() {
            if d == 0 {
                guard i < x.count else { throw s.shapeError("input", "rank > \(i) for shape \(s.shape)", x) }
                out[i] = x[i]
            } else if d == -1 {
                guard infer == nil else { throw EngineError.invalidAttribute(node: s.name, attribute: "shape", expected: "at most one -1", actual: "\(s.shape)") }
                infer = i; continue
            } else if d < 0 {
                throw EngineError.invalidAttribute(node: s.name, attribute: "shape", expected: "dimensions ≥ -1", actual: "\(s.shape)")
            }
            guard let k = try? Checked.mul(known, out[i]) else { throw s.shapeError("input", "a shape whose size fits for \(s.shape)", x) }
            known = k
        }
        let total = x.reduce(1, *)
        if let i = infer {
            guard known > 0, total % known == 0 else { throw s.shapeError("input", "a multiple of \(known) elements for \(s.shape)", x) }
            out[i] = total / known
        }
        guard out.reduce(1, *) == total else { throw s.shapeError("input", "\(out.reduce(1, *)) elements for \(s.shape)", x) }
        return out
    }

    private static func flattenShape(_ s: Step, _ x: [Int]) throws -> [Int] {
        let ax = s.axis.map { $0 < 0 ? $0 + x.count : $0 } ?? 1
        guard ax >= 0, ax <= x.count else {
            throw EngineError.invalidAttribute(node: s.name, attribute: "axis", expected: "in 0...\(x.count)", actual: "\(s.axis ?? 1)")
        }
        return [x[..<ax].reduce(1, *), x[ax...].reduce(1, *)]
    }

    private static func transposeShape(_ s: Step, _ x: [Int]) throws -> [Int] {
        let perm = s.perm ?? Array((0..<x.count).reversed())
        guard perm.sorted() == Array(0..<x.count) else {
            throw EngineError.invalidAttribute(node: s.name, attribute: "perm", expected: "a permutation of 0..<\(x.count)", actual: "\(perm)")
        }
        return perm.map { x[$0] }
    }

    private static func squeezeShape(_ s: Step, _ x: [Int]) throws -> [Int] {
        let axes = try (s.axes ?? x.indices.filter { x[$0] == 1 }).map { try axis($0, rank: x.count, s) }
        for a in axes where x[a] != 1 { throw s.shapeError("input", "size 1 on axis \(a)", x) }
        return x.indices.filter { !axes.contains($0) }.map { x[$0] }
    }

    private static func unsqueezeShape(_ s: Step, _ x: [Int]) throws -> [Int] {
        let rank = x.count + (s.axes ?? []).count
        let axes = try (s.axes ?? []).map { try axis($0, rank: rank, s) }
        guard Set(axes).count == axes.count else {
            throw EngineError.invalidAttribute(node: s.name, attribute: "axes", expected: "distinct axes", actual: "\(s.axes ?? [])")
        }
        var out: [Int] = [], it = x.makeIterator()
        for i in 0..<rank { out.append(axes.contains(i) ? 1 : it.next()!) }
        return out
    }

    private static func resizeShape(_ s: Step, _ x: [Int]) throws -> [Int] {
        guard x.count == 4, let spec = s.resize, spec.size.count == 2 else { throw s.shapeError("input", "(N,H,W,C)", x) }
        guard spec.size.allSatisfy({ $0 > 0 }) || x[0] == 0 || x[3] == 0 else {
            throw s.shapeError("output", "a size > 0 (resize to \(spec.size))", x)
        }
        guard x[1] > 0 && x[2] > 0 || spec.size.contains(0) else { throw s.shapeError("input", "a non-empty image to resize", x) }
        return [x[0], spec.size[0], spec.size[1], x[3]]
    }

    private static func sliceShape(_ s: Step, _ x: [Int]) throws -> [Int] {
        var out = x
        var seen = Set<Int>()
        for a in s.slices {
            let ax = try axis(a.axis, rank: x.count, s)
            guard seen.insert(ax).inserted else {
                throw EngineError.invalidAttribute(node: s.name, attribute: "axes", expected: "distinct axes", actual: "\(s.slices.map(\.axis))")
            }
            if a.count > 0 {
                let (span, o1) = (a.count - 1).multipliedReportingOverflow(by: a.step)
                let (last, o2) = a.start.addingReportingOverflow(span)
                guard !o1, !o2, a.start < x[ax], last >= 0, last < x[ax] else {
                    throw s.shapeError("input", "axis \(ax) holding \(a.count) elements from \(a.start) every \(a.step)", x)
                }
            }
            out[ax] = a.count
        }
        return out
    }

    private static func shapeShape(_ s: Step, _ x: [Int]) throws -> [Int] {
        for a in s.perm ?? [] where a < 0 || a >= x.count {
            throw EngineError.invalidAttribute(node: s.name, attribute: "perm", expected: "axes in 0..<\(x.count)", actual: "\(s.perm ?? [])")
        }
        return [s.perm?.count ?? x.count]
    }

    private static func topKShape(_ s: Step, _ x: [Int]) throws -> [Int] {
        let ax = try axis(s.axis ?? -1, rank: x.count, s)
        guard s.k <= x[ax] else { throw s.shapeError("input", "at least k = \(s.k) elements along axis \(ax)", x) }
        var out = x
        out[ax] = s.k
        return out
    }

    private static func padShape(_ s: Step, _ x: [Int]) throws -> [Int] {
        guard s.pads.count == 2 * x.count else {
            throw EngineError.invalidAttribute(node: s.name, attribute: "pads", expected: "\(2 * x.count) values", actual: "\(s.pads.count)")
        }
        let out = x.indices.map { x[$0] + s.pads[$0] + s.pads[$0 + x.count] }
        guard out.allSatisfy({ $0 >= 0 }) else { throw s.shapeError("input", "large enough for pads \(s.pads)", x) }
        if s.padMode != "constant" {
            for i in x.indices where s.pads[i] > 0 || s.pads[i + x.count] > 0 {
                let limit = s.padMode == "reflect" ? x[i] - 1 : (x[i] > 0 ? Int.max : 0)
                guard s.pads[i] <= limit, s.pads[i + x.count] <= limit else {
                    throw s.shapeError("input", "axis \(i) large enough for \(s.padMode) pads \(s.pads)", x)
                }
            }
        }
        return out
    }
}

private extension Step {
    func shapeError(_ what: String, _ expected: String, _ actual: [Int]) -> EngineError {
        .shapeMismatch(node: name, what: what, expected: expected, actual: actual)
    }
}
