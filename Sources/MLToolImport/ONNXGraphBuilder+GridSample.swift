import MLToolCore

/// GridSample (opset 16, 20, 22) with a constant grid: every output element is a fixed weighted sum of input
/// elements, so the op becomes, per tap, a Gather of the flattened input by a constant index table times a constant
/// weight, summed. Modes nearest (round half to even), (bi)linear and (bi)cubic (Keys, a = -0.75) over any number
/// of spatial axes; padding zeros, border and reflection; `align_corners` — onnx's reference, tap for tap.
extension ONNXGraphBuilder {
    /// Most taps one output element may read (cubic over 3 spatial axes is 64).
    static let maxGridSampleTaps = 64

    mutating func gridSample(_ node: ONNXFile.Node) throws {
        let grid = try constant(node, 1, what: "grid")
        let x = try flattened(node, 0, what: "X")
        let r = x.shape.count, dims = r - 2
        guard r >= 3, grid.rank == r, grid.shape[0] == x.shape[0], grid.shape[r - 1] == dims else {
            throw ImportError.invalid(file: file, place: "\(place(node)) grid", expected: "(N, out…, \(max(dims, 1))) for X \(x.shape)",
                                      actual: "\(grid.shape)")
        }
        let mode = string(node, "mode", opset >= 20 ? "linear" : "bilinear")
        let perAxis: Int
        switch mode {
        case "nearest": perAxis = 1
        case "linear", "bilinear": perAxis = 2
        case "cubic", "bicubic": perAxis = 4
        default:
            throw ImportError.invalid(file: file, place: "\(place(node)) mode", expected: "nearest, linear or cubic (bilinear, bicubic before opset 20)",
                                      actual: mode)
        }
        let padding = string(node, "padding_mode", "zeros")
        guard ["zeros", "border", "reflection"].contains(padding) else {
            throw ImportError.invalid(file: file, place: "\(place(node)) padding_mode", expected: "zeros, border or reflection", actual: padding)
        }
        var total = 1
        for _ in 0..<dims { total *= perAxis }
        guard total <= Self.maxGridSampleTaps else {
            throw ImportError.invalid(file: file, place: place(node), expected: "at most \(Self.maxGridSampleTaps) taps", actual: "\(total)")
        }
        let align = int(node, "align_corners", 0) != 0
        let (batch, channels) = (x.shape[0], x.shape[1])
        let spatial = Array(x.shape[2...]), outSpatial = Array(grid.shape[1..<(r - 1)])
        let outShape = [batch, channels] + outSpatial
        let count = try expansionCount(node, outShape, what: "output")
        let points = Self.product(outSpatial[...]), plane = Self.product(spatial[...])
        let strides = Self.strides(spatial)
        var tables = [[Int]](repeating: [Int](repeating: 0, count: count), count: total)
        var weights = [[Double]](repeating: [Double](repeating: 0, count: count), count: total)
        for b in 0..<batch {
            for p in 0..<points {
                // Each axis's taps (index, weight); index nil reads the zero padding. The grid's last axis lists
                // the coordinates innermost axis first (x, y[, z]).
                var taps: [[(index: Int?, weight: Double)]] = []
                for i in 0..<dims {
                    let g = grid.values[(b * points + p) * dims + (dims - 1 - i)]
                    let n = spatial[i]
                    taps.append(Self.gridTaps(g, size: n, mode: perAxis, padding: padding, align: align))
                }
                for t in 0..<total {
                    var index = 0, weight = 1.0, digits = t, outside = false
                    for i in stride(from: dims - 1, through: 0, by: -1) {
                        let tap = taps[i][digits % perAxis]
                        digits /= perAxis
                        if let k = tap.index { index += k * strides[i] } else { outside = true }
                        weight *= tap.weight
                    }
                    for c in 0..<channels {
                        let o = (b * channels + c) * points + p
                        tables[t][o] = outside ? 0 : (b * channels + c) * plane + index
                        weights[t][o] = outside ? 0 : weight
                    }
                }
            }
        }
        let out = try outputName(node)
        var sum: String?
        for t in 0..<total {
            let picked = try gatherTable(node, x.name, tables[t], shape: outShape)
            let w = expansionConstant(node, "weight\(t)", shape: outShape, values: weights[t])
            let term = try step(node, "Mul", [picked, w], output: total == 1 ? out : nil)
            if let s = sum { sum = try step(node, "Add", [s, term], output: t == total - 1 ? out : nil) } else { sum = term }
        }
    }

    /// The taps along one axis of `size` for normalized coordinate `g`: `mode` 1 (nearest), 2 (linear) or 4 (cubic).
    static func gridTaps(_ g: Double, size n: Int, mode: Int, padding: String, align: Bool) -> [(index: Int?, weight: Double)] {
        let (lo, hi) = align ? (0.0, Double(n - 1)) : (-0.5, Double(n) - 0.5)
        func reflect(_ v: Double) -> Double {
            let range = hi - lo
            guard range > 0 else { return lo }
            if v < lo {
                let d = lo - v, k = (d / range).rounded(.towardZero), rest = d - k * range
                return Int(k) % 2 == 0 ? lo + rest : hi - rest
            }
            if v > hi {
                let d = v - hi, k = (d / range).rounded(.towardZero), rest = d - k * range
                return Int(k) % 2 == 0 ? hi - rest : lo + rest
            }
            return v
        }
        func at(_ k: Int) -> Int? {
            switch padding {
            case "zeros": return k >= 0 && k < n ? k : nil
            case "border": return min(max(k, 0), n - 1)
            default: return min(max(Int(reflect(Double(k)).rounded(.towardZero)), 0), n - 1)
            }
        }
        var v = align ? (g + 1) / 2 * Double(n - 1) : ((g + 1) * Double(n) - 1) / 2
        guard v.isFinite else { return [(index: nil, weight: 0)] + [(index: Int?, weight: Double)](repeating: (nil, 0), count: mode - 1) }
        if mode == 1 { v = v.rounded(.toNearestOrEven) }
        if v < lo || v > hi {
            if padding == "border" { v = min(max(v, 0), Double(n - 1)) } else if padding == "reflection" { v = reflect(v) }
        }
        let x0 = v.rounded(.down), f = v - x0
        let k0 = Int(x0)
        switch mode {
        case 1: return [(at(Int(v.rounded(.towardZero))), 1)]
        case 2: return [(at(k0), 1 - f), (at(k0 + 1), f)]
        default:
            let a = -0.75
            func far(_ s: Double) -> Double { ((a * s - 5 * a) * s + 8 * a) * s - 4 * a }
            func near(_ s: Double) -> Double { ((a + 2) * s - (a + 3)) * s * s + 1 }
            return [(at(k0 - 1), far(f + 1)), (at(k0), near(f)), (at(k0 + 1), near(1 - f)), (at(k0 + 2), far(2 - f))]
        }
    }
}

/// RotaryEmbedding (opset 23) with constant cos / sin caches (and position_ids): x·C + (x·P)·S, where C and S hold
/// each element's cosine and sine (1 and 0 past `rotary_embedding_dim`) and P is the constant ±1 matrix pairing the
/// rotated halves (`interleaved` 0) or neighbours (`interleaved` 1) along the last axis. x is (batch, sequence,
/// heads·size) with `num_heads`, or (batch, heads, sequence, size).
extension ONNXGraphBuilder {
    mutating func rotaryEmbedding(_ node: ONNXFile.Node) throws {
        let x = try activation(node)
        let (cosCache, sinCache) = (try constant(node, 1, what: "cos_cache"), try constant(node, 2, what: "sin_cache"))
        let positions = try optionalConstant(node, 3, what: "position_ids")
        let r = x.shape.count
        guard r == 3 || r == 4, x.shape.allSatisfy({ $0 >= 0 }) else {
            throw ImportError.invalid(file: file, place: place(node), expected: "an input of rank 3 or 4 with known dimensions", actual: "\(x.shape)")
        }
        let (batch, sequence) = (x.shape[0], r == 4 ? x.shape[2] : x.shape[1])
        let heads = r == 4 ? x.shape[1] : int(node, "num_heads", 0)
        guard heads >= 1, r == 4 || x.shape[2] % heads == 0 else {
            throw ImportError.invalid(file: file, place: "\(place(node)) num_heads", expected: "a head count dividing \(x.shape[2])", actual: "\(heads)")
        }
        let size = r == 4 ? x.shape[3] : x.shape[2] / heads
        let rotated = int(node, "rotary_embedding_dim", 0) == 0 ? size : int(node, "rotary_embedding_dim", 0)
        let half = rotated / 2
        guard rotated % 2 == 0, rotated <= size, cosCache.shape.last == half, sinCache.shape == cosCache.shape else {
            throw ImportError.invalid(file: file, place: "\(place(node)) cos_cache", expected: "caches (…, \(half)) for rotary_embedding_dim \(rotated) of \(size)",
                                      actual: "\(cosCache.shape), \(sinCache.shape)")
        }
        // The cache row of (b, s).
        let rows = cosCache.values.count / max(half, 1)
        func row(_ b: Int, _ s: Int) throws -> Int {
            guard let positions else {
                guard cosCache.shape.count == 3, cosCache.shape[0] == batch, cosCache.shape[1] == sequence else {
                    throw ImportError.invalid(file: file, place: "\(place(node)) cos_cache", expected: "(\(batch), \(sequence), \(half)) without position_ids",
                                              actual: "\(cosCache.shape)")
                }
                return b * sequence + s
            }
            guard positions.values.count == batch * sequence, let p = positions.ints[b * sequence + s], p >= 0, p < rows else {
                throw ImportError.invalid(file: file, place: "\(place(node)) position_ids", expected: "(\(batch), \(sequence)) positions in 0..<\(rows)",
                                          actual: "\(positions.shape)")
            }
            return p
        }
        let interleaved = int(node, "interleaved", 0) != 0
        let count = try expansionCount(node, x.shape, what: "input")
        let last = x.shape[r - 1]
        _ = try expansionCount(node, [last, last], what: "last axis")
        var c = [Double](repeating: 1, count: count), s = [Double](repeating: 0, count: count)
        var pairing = [Double](repeating: 0, count: last * last)
        for j in 0..<last {
            let (head, k) = (j / size, j % size)
            guard k < rotated else { continue }
            // (x·P)[j] = −x[partner] for the first of a pair, +x[partner] for the second.
            let (first, partner, angle) = interleaved ? (k % 2 == 0, k % 2 == 0 ? k + 1 : k - 1, k / 2)
                : (k < half, k < half ? k + half : k - half, k % half)
            pairing[(head * size + partner) * last + j] = first ? -1 : 1
            for p in stride(from: j, to: count, by: last) {
                // p's (b, s): the element's batch and sequence position.
                let outer = p / last
                let (b, t) = r == 4 ? (outer / (heads * sequence), outer % sequence) : (outer / sequence, outer % sequence)
                let at = try row(b, t) * half + angle
                (c[p], s[p]) = (cosCache.values[at], sinCache.values[at])
            }
        }
        // The cosines and sines are per batch item (position_ids, the caches): the graph runs at this batch size.
        if batch > 1 { batchFree = false }
        let swapped = try step(node, "MatMul", [x.name, expansionConstant(node, "pairing", shape: [last, last], values: pairing)])
        let cosines = try step(node, "Mul", [x.name, expansionConstant(node, "cos", shape: x.shape, values: c)])
        let sines = try step(node, "Mul", [swapped, expansionConstant(node, "sin", shape: x.shape, values: s)])
        try step(node, "Add", [cosines, sines], output: outputName(node))
    }
}

/// CenterCropPad (opset 18): each axis listed (`axes`, default all) cropped or zero-padded to the constant `shape`
/// (input 1) around its centre (the extra element at the end), as a Gather of the flattened input by a constant
/// table and a Where against the padding.
extension ONNXGraphBuilder {
    mutating func centerCropPad(_ node: ONNXFile.Node) throws {
        let target = try constant(node, 1, what: "shape")
        let x = try flattened(node, 0, what: "input_data")
        let r = x.shape.count
        let axes = try (ints(node, "axes") ?? Array(0..<r)).map { try normalize($0, rank: r, node) }
        guard target.values.count == axes.count, Set(axes).count == axes.count else {
            throw ImportError.invalid(file: file, place: "\(place(node)) shape", expected: "\(axes.count) sizes for distinct axes \(axes)",
                                      actual: "\(target.values)")
        }
        var outShape = x.shape
        for (a, v) in zip(axes, target.ints) {
            guard let v, v >= 0 else {
                throw ImportError.invalid(file: file, place: "\(place(node)) shape", expected: "sizes ≥ 0", actual: "\(target.values)")
            }
            outShape[a] = v
        }
        let count = try expansionCount(node, outShape, what: "output")
        let (inStrides, outStrides) = (Self.strides(x.shape), Self.strides(outShape))
        var table = [Int](repeating: 0, count: count), inside = [Double](repeating: 1, count: count)
        for o in 0..<count {
            var flat = 0
            for d in 0..<r {
                // Crop: skip (in − out) / 2 at the start; pad: (out − in) / 2 zeros at the start.
                let at = o / outStrides[d] % outShape[d]
                let source = x.shape[d] >= outShape[d] ? at + (x.shape[d] - outShape[d]) / 2 : at - (outShape[d] - x.shape[d]) / 2
                if source < 0 || source >= x.shape[d] { inside[o] = 0 } else { flat += source * inStrides[d] }
            }
            table[o] = inside[o] == 0 ? 0 : flat
        }
        let picked = try gatherTable(node, x.name, table, shape: outShape)
        if inside.allSatisfy({ $0 == 1 }) {
            try step(node, "Identity", [picked], output: outputName(node))
        } else {
            let mask = expansionConstant(node, "inside", shape: outShape, values: inside, integer: true)
            try step(node, "Where", [mask, picked, scalarConstant(node, "zero", 0)], output: outputName(node))
        }
    }
}

/// AffineGrid (opset 20): the sampling grid of theta (N, 2, 3) or (N, 3, 4) over the constant `size` (N, C, H, W)
/// or (N, C, D, H, W): theta times the constant homogeneous base grid (x, y[, z], 1 per position; -1…1 at the
/// corner pixels' centres with `align_corners`, else at their edges), as (N, spatial…, 2 or 3).
extension ONNXGraphBuilder {
    mutating func affineGrid(_ node: ONNXFile.Node) throws {
        let theta = try activation(node)
        let size = try constant(node, 1, what: "size").ints
        let dims = size.count - 2
        guard dims == 2 || dims == 3, theta.shape.count == 3, theta.shape[1] == dims, theta.shape[2] == dims + 1,
              size.allSatisfy({ ($0 ?? 0) >= 1 }) else {
            throw ImportError.invalid(file: file, place: place(node), expected: "theta (N, 2, 3) with size (N, C, H, W) or (N, 3, 4) with (N, C, D, H, W)",
                                      actual: "theta \(theta.shape), size \(size)")
        }
        let spatial = size[2...].map { $0 ?? 1 }
        let points = try expansionCount(node, spatial, what: "size")
        let align = int(node, "align_corners", 0) != 0
        func coordinate(_ i: Int, _ n: Int) -> Double {
            align ? (n == 1 ? -1 : -1 + 2 * Double(i) / Double(n - 1)) : -1 + (2 * Double(i) + 1) / Double(n)
        }
        // base[c][p]: row c is x, y (, z), 1 — x along the last spatial axis.
        var base = [Double](repeating: 1, count: (dims + 1) * points)
        let strides = Self.strides(spatial)
        for p in 0..<points {
            for c in 0..<dims {
                let axis = dims - 1 - c
                base[c * points + p] = coordinate(p / strides[axis] % spatial[axis], spatial[axis])
            }
        }
        let grid = try step(node, "MatMul", [theta.name, expansionConstant(node, "base", shape: [dims + 1, points], values: base)])
        let rows = try step(node, "Transpose", [grid], [ONNXFile.Attribute(name: "perm", type: 7, ints: [0, 2, 1])])
        let shape = expansionConstant(node, "grid_shape", shape: [dims + 2], values: ([0] + spatial + [dims]).map(Double.init), integer: true)
        try step(node, "Reshape", [rows, shape], output: outputName(node))
    }
}

/// TensorScatter (opset 24): the update written into the cache along `axis` (default -2) from the constant
/// write_indices[b] (default 0) on, wrapping around the axis when `mode` is circular; a scatter without reduction.
extension ONNXGraphBuilder {
    mutating func tensorScatter(_ node: ONNXFile.Node) throws {
        let cache = try activation(node, 0)
        _ = try expansionCount(node, cache.shape, what: "past_cache")
        let update = try flattened(node, 1, what: "update")
        let r = cache.shape.count
        let axis = try normalize(int(node, "axis", -2), rank: r, node)
        let mode = string(node, "mode", "linear")
        guard mode == "linear" || mode == "circular" else {
            throw ImportError.invalid(file: file, place: "\(place(node)) mode", expected: "linear or circular", actual: mode)
        }
        guard axis >= 1, update.shape.count == r, (0..<r).allSatisfy({ $0 == axis ? update.shape[$0] <= cache.shape[$0] : update.shape[$0] == cache.shape[$0] }) else {
            throw ImportError.invalid(file: file, place: "\(place(node)) update", expected: "the cache's shape \(cache.shape) but up to axis \(axis)'s length",
                                      actual: "\(update.shape)")
        }
        let starts = try optionalConstant(node, 2, what: "write_indices")?.ints ?? [Int?](repeating: 0, count: cache.shape[0])
        guard starts.count == cache.shape[0] else {
            throw ImportError.invalid(file: file, place: "\(place(node)) write_indices", expected: "\(cache.shape[0]) indices", actual: "\(starts.count)")
        }
        let (cacheStrides, updateStrides) = (Self.strides(cache.shape), Self.strides(update.shape))
        let length = cache.shape[axis]
        var writes: [(update: Int, target: Int)] = []
        for u in 0..<Self.product(update.shape[...]) {
            var target = 0
            for d in 0..<r {
                var k = u / updateStrides[d] % update.shape[d]
                if d == axis {
                    k += starts[u / updateStrides[0]] ?? 0
                    if mode == "circular" && length > 0 { k = ((k % length) + length) % length }
                    guard k >= 0, k < length else {
                        throw ImportError.invalid(file: file, place: "\(place(node)) write_indices", expected: "writes within 0..<\(length) along axis \(axis)",
                                                  actual: "\(starts)")
                    }
                }
                target += k * cacheStrides[d]
            }
            writes.append((u, target))
        }
        try scatter(node, data: cache, updates: update.name, writes)
    }
}
