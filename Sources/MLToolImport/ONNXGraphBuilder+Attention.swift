import MLToolCore

/// Attention (opset 23, 24), expanded into the ops it is defined by (onnx's reference and function body):
/// Q, K, V of rank 3 (batch, sequence, heads·size: `q_num_heads` / `kv_num_heads` split them) or 4 (batch, heads,
/// sequence, size); past_key / past_value concatenated before K and V (present_key / present_value outputs); grouped
/// heads (K and V heads repeated when q heads are a multiple of kv heads); Q·Kᵀ with both scaled by √`scale`
/// (default 1/√size); `softcap` (c·tanh(x/c)); the additive bias of a bool mask (false → -∞) or a float mask, padded
/// with -∞ to the keys' length, `is_causal` (bottom-right aligned: query i sees key j ≤ i + past length, or
/// nonpad_kv_seqlen[b] − queries without a past), nonpad_kv_seqlen (opset 24: keys from that length on masked) and
/// the sliding window (opset 25: `left_window_size` / `right_window_size` keys before / after the query's position);
/// softmax over the keys with rows whose bias is all -∞ set to 0; times V. The qk_matmul_output output follows the
/// reference's `qk_matmul_output_mode`: 0 and 1 the (softcapped) product, 2 with the bias, 3 the probabilities.
/// Bool masks and nonpad_kv_seqlen must be constants; a float mask may be computed when it covers all the keys (the
/// all-masked-row guard then sees only the constant part of the bias).
extension ONNXGraphBuilder {
    typealias AttentionOperand = (name: String, shape: [Int])

    mutating func attention(_ node: ONNXFile.Node) throws {
        let (left, right) = (int(node, "left_window_size", -1), int(node, "right_window_size", -1))
        guard left >= -1, right >= -1 else {
            throw attentionError(node, "left_window_size / right_window_size", "-1 or sizes ≥ 0", "\(left), \(right)")
        }
        var (q, k, v, rank) = try attentionHeads(node)
        let (batch, qHeads, queries, size) = (q.shape[0], q.shape[1], q.shape[2], q.shape[3])
        let kvHeads = k.shape[1]
        guard v.shape[1] == kvHeads, kvHeads >= 1, qHeads >= 1, qHeads % kvHeads == 0, k.shape[3] == size, v.shape[2] == k.shape[2] else {
            throw attentionError(node, "", "K and V heads dividing Q's, K's head size that of Q, V's sequence that of K",
                                      "Q \(q.shape), K \(k.shape), V \(v.shape)")
        }
        let past = try attentionCache(node, &k, &v)
        let keys = k.shape[2]
        guard batch >= 0, queries >= 0, keys >= 0, size >= 1 else {
            throw attentionError(node, "", "known batch, sequence and head sizes", "Q \(q.shape), K \(k.shape)")
        }
        if qHeads != kvHeads {
            // Grouped heads: q head h reads kv head h / (qHeads / kvHeads).
            let group = qHeads / kvHeads
            let table = expansionConstant(node, "kv_heads", shape: [qHeads], values: (0..<qHeads).map { Double($0 / group) }, integer: true)
            let axis = ONNXFile.Attribute(name: "axis", type: 2, i: 1)
            k = (try step(node, "Gather", [k.name, table], [axis]), [batch, qHeads, keys, size])
            v = (try step(node, "Gather", [v.name, table], [axis]), [batch, qHeads, keys, v.shape[3]])
        }
        let capped = try attentionScores(node, q, k)
        // The bias: constant parts over (batch, q heads, queries, keys), a computed float mask added after.
        let biasShape = [batch, qHeads, queries, keys]
        var (bias, computedMask) = try attentionMask(node, biasShape)
        try maskPositions(node, &bias, biasShape, past: past, window: (left, right))
        var scores = capped
        if bias.contains(where: { $0 != 0 }) {
            // The bias is per batch item (nonpad_kv_seqlen, a mask's batch axis): the graph runs at this batch size.
            if batch > 1 { batchFree = false }
            scores = try step(node, "Add", [scores, expansionConstant(node, "bias", shape: biasShape, values: bias)])
        }
        if let m = computedMask { scores = try step(node, "Add", [scores, m]) }
        let probabilities = try maskedSoftmax(node, scores, bias, biasShape)
        if let o = node.attentionOutput(3) {
            switch int(node, "qk_matmul_output_mode", 0) {
            case 0, 1: try step(node, "Identity", [capped], output: o)
            case 2: try step(node, "Identity", [scores], output: o)
            case 3: try step(node, "Identity", [probabilities], output: o)
            case let mode: throw attentionError(node, "qk_matmul_output_mode", "0, 1, 2 or 3", "\(mode)")
            }
        }
        guard let y = node.attentionOutput(0) else { return }
        if rank == 4 {
            try step(node, "MatMul", [probabilities, v.name], output: y)
        } else {
            let heads = try step(node, "Transpose", [step(node, "MatMul", [probabilities, v.name])], [Self.headsPerm])
            let shape = expansionConstant(node, "merged", shape: [3], values: [0, 0, -1], integer: true)
            try step(node, "Reshape", [heads, shape], output: y)
        }
    }

    private func attentionError(_ node: ONNXFile.Node, _ what: String, _ expected: String, _ actual: String) -> ImportError {
        ImportError.invalid(file: file, place: "\(place(node))\(what.isEmpty ? "" : " " + what)", expected: expected, actual: actual)
    }

    private static let headsPerm = ONNXFile.Attribute(name: "perm", type: 7, ints: [0, 2, 1, 3])

    /// Q, K and V as (batch, heads, sequence, size): rank-3 ones (batch, sequence, heads·size) split by
    /// `q_num_heads` / `kv_num_heads`.
    private mutating func attentionHeads(_ node: ONNXFile.Node) throws
        -> (q: AttentionOperand, k: AttentionOperand, v: AttentionOperand, rank: Int) {
        let (q, k, v) = (try activation(node, 0), try activation(node, 1), try activation(node, 2))
        let rank = q.shape.count
        guard [3, 4].contains(rank), k.shape.count == rank, v.shape.count == rank else {
            throw attentionError(node, "", "Q, K and V all of rank 3 or all of rank 4", "\(q.shape), \(k.shape), \(v.shape)")
        }
        guard rank == 3 else { return (q, k, v, rank) }
        let heads = [int(node, "q_num_heads", 0), int(node, "kv_num_heads", 0), int(node, "kv_num_heads", 0)]
        var split: [AttentionOperand] = []
        for (x, h) in zip([q, k, v], heads) {
            guard h >= 1, x.shape[2] >= 0, x.shape[2] % h == 0 else {
                throw attentionError(node, "q_num_heads / kv_num_heads", "head counts ≥ 1 dividing the hidden sizes", "\(heads) for \(x.shape)")
            }
            let shape = expansionConstant(node, "heads", shape: [4], values: [0, 0, Double(h), Double(x.shape[2] / h)], integer: true)
            let name = try step(node, "Transpose", [step(node, "Reshape", [x.name, shape])], [Self.headsPerm])
            split.append((name, [x.shape[0], h, x.shape[1], x.shape[2] / h]))
        }
        return (split[0], split[1], split[2], rank)
    }

    /// The key/value cache: past_key / past_value concatenated before K and V (the present_key / present_value
    /// outputs); the past length.
    private mutating func attentionCache(_ node: ONNXFile.Node, _ k: inout AttentionOperand, _ v: inout AttentionOperand) throws -> Int {
        let (kvHeads, size) = (k.shape[1], k.shape[3])
        guard let pk = node.attentionInput(4), let pv = node.attentionInput(5) else {
            if node.attentionInput(4) != nil || node.attentionInput(5) != nil {
                throw attentionError(node, "past_key / past_value", "both or neither", "one of them")
            }
            if let o = node.attentionOutput(1) { try step(node, "Identity", [k.name], output: o) }
            if let o = node.attentionOutput(2) { try step(node, "Identity", [v.name], output: o) }
            return 0
        }
        let (ps, vs) = (try shape(of: pk, in: node), try shape(of: pv, in: node))
        guard ps.count == 4, vs.count == 4, ps[2] >= 0, ps[2] == vs[2] else {
            throw attentionError(node, "past_key / past_value", "(batch, kv heads, past, size) with one past length", "\(ps), \(vs)")
        }
        let past = ps[2]
        let axis = ONNXFile.Attribute(name: "axis", type: 2, i: 2)
        k = (try step(node, "Concat", [pk, k.name], output: node.attentionOutput(1), [axis]), [k.shape[0], kvHeads, past + k.shape[2], size])
        v = (try step(node, "Concat", [pv, v.name], output: node.attentionOutput(2), [axis]), [v.shape[0], kvHeads, past + v.shape[2], v.shape[3]])
        return past
    }

    /// Scores: (Q·√scale)·(Kᵀ·√scale), soft-capped (c·tanh(x/c)) when `softcap` is set.
    private mutating func attentionScores(_ node: ONNXFile.Node, _ q: AttentionOperand, _ k: AttentionOperand) throws -> String {
        let scale = float(node, "scale", 1 / Float(q.shape[3]).squareRoot())
        let root = scalarConstant(node, "sqrt_scale", scale.squareRoot())
        let kt = try step(node, "Transpose", [k.name], [ONNXFile.Attribute(name: "perm", type: 7, ints: [0, 1, 3, 2])])
        var scores = try step(node, "MatMul", [step(node, "Mul", [q.name, root]), step(node, "Mul", [kt, root])])
        let softcap = float(node, "softcap", 0)
        if softcap > 0 {
            let c = scalarConstant(node, "softcap", softcap)
            scores = try step(node, "Mul", [step(node, "Tanh", [step(node, "Div", [scores, c])]), c])
        }
        return scores
    }

    /// attn_mask: a constant one as the additive bias (bool: false → -∞; padded with -∞ to the keys' length), a
    /// computed float one (over all the keys) as a rank-4 tensor to add.
    private mutating func attentionMask(_ node: ONNXFile.Node, _ biasShape: [Int]) throws -> (bias: [Double], computed: String?) {
        let (qHeads, queries, keys) = (biasShape[1], biasShape[2], biasShape[3])
        let count = try expansionCount(node, biasShape, what: "bias")
        var bias = [Double](repeating: 0, count: count)
        guard let m = node.attentionInput(3) else { return (bias, nil) }
        let ms = try shape(of: m, in: node)
        guard ms.count >= 1, ms.count <= 4, ms.last.map({ $0 >= 0 && $0 <= keys }) ?? false,
              zip(ms.reversed().dropFirst(), biasShape.reversed().dropFirst()).allSatisfy({ $0.0 == 1 || $0.0 == $0.1 }) else {
            throw attentionError(node, "attn_mask", "a mask broadcasting to \(biasShape) with at most \(keys) keys", "\(ms)")
        }
        if let c = constants[m] {
            let boolean = c.dataType == 9
            let padded = [Int](repeating: 1, count: 4 - ms.count) + ms
            let strides = Self.strides(padded)
            for p in 0..<count {
                let index = [p / (qHeads * queries * keys), p / (queries * keys) % qHeads, p / keys % queries, p % keys]
                guard index[3] < padded[3] else { bias[p] = -.infinity; continue }
                let at = (0..<4).reduce(0) { $0 + (padded[$1] == 1 ? 0 : index[$1] * strides[$1]) }
                bias[p] = boolean ? (c.values[at] != 0 ? 0 : -.infinity) : c.values[at]
            }
            return (bias, nil)
        }
        guard ms.last == keys else {
            throw attentionError(node, "attn_mask", "a constant mask, or a computed one over all \(keys) keys", "computed \(ms)")
        }
        guard ms.count < 4 else { return (bias, m) }
        // As (…, 1, queries, keys) of rank 4: the rank-4 add then broadcasts it in NCHW order.
        let shape = expansionConstant(node, "mask_shape", shape: [4],
                                      values: ([Int](repeating: 1, count: 4 - ms.count) + ms).map(Double.init), integer: true)
        return (bias, try step(node, "Reshape", [m, shape]))
    }

    /// -∞ in the bias where `is_causal`, the sliding window or nonpad_kv_seqlen hide a key from a query.
    private func maskPositions(_ node: ONNXFile.Node, _ bias: inout [Double], _ biasShape: [Int], past: Int,
                               window: (left: Int, right: Int)) throws {
        let (batch, qHeads, queries, keys) = (biasShape[0], biasShape[1], biasShape[2], biasShape[3])
        let causal = int(node, "is_causal", 0) != 0
        var lengths: [Int]?
        if let n = node.attentionInput(6) {
            guard node.attentionInput(4) == nil else { throw attentionError(node, "nonpad_kv_seqlen", "no past_key with it", "both") }
            let c = try constant(node, 6, what: "nonpad_kv_seqlen")
            guard c.values.count == batch else { throw attentionError(node, "nonpad_kv_seqlen", "\(batch) lengths", "\(c.shape) '\(n)'") }
            lengths = c.ints.map { $0 ?? keys }
        }
        let (left, right) = window
        for p in bias.indices {
            let (b, i, j) = (p / (qHeads * queries * keys), p / keys % queries, p % keys)
            let offset = lengths.map { $0[b] - queries } ?? past
            if causal && j > i + offset { bias[p] = -.infinity }
            if left >= 0 && i + offset - j > left || right >= 0 && j - (i + offset) > right { bias[p] = -.infinity }
            if let lengths, j >= lengths[b] { bias[p] = -.infinity }
        }
    }

    /// Softmax over the keys; rows with no key to attend give 0 (their softmax would be NaN).
    private mutating func maskedSoftmax(_ node: ONNXFile.Node, _ scores: String, _ bias: [Double], _ biasShape: [Int]) throws -> String {
        let keys = biasShape[3]
        let probabilities = try step(node, "Softmax", [scores], [ONNXFile.Attribute(name: "axis", type: 2, i: 3)])
        var dead = [Double](repeating: 0, count: bias.count / max(keys, 1))
        for r in dead.indices where keys > 0 && bias[(r * keys)..<((r + 1) * keys)].allSatisfy({ $0 == -.infinity }) { dead[r] = 1 }
        guard dead.contains(1) else { return probabilities }
        let rows = expansionConstant(node, "masked_rows", shape: [biasShape[0], biasShape[1], biasShape[2], 1], values: dead, integer: true)
        return try step(node, "Where", [rows, scalarConstant(node, "zero", 0), probabilities])
    }
}

private extension ONNXFile.Node {
    /// Input `i`, when given (an empty name is an omitted optional input).
    func attentionInput(_ i: Int) -> String? { i < inputs.count && !inputs[i].isEmpty ? inputs[i] : nil }
    func attentionOutput(_ i: Int) -> String? { i < outputs.count && !outputs[i].isEmpty ? outputs[i] : nil }
}
