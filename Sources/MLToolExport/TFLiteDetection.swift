import MLToolCore

/// An object detector's decoder and non-maximum suppression as TFLite builtin operators after the network, so that
/// LiteRT gives the boxes `MLToolDetect.Detector` gives (docs/FORMAT.md section 4.4; docs/TFLITE-EXPORT.md).
///
/// One image in (batch 1); out, K ≤ maxDetections objects, highest score first, K known after `invoke` (the
/// tensors are dynamic): `detected_boxes` (K, 4) float32 corners x1, y1, x2, y2 in pixels of the model input,
/// `detected_scores` (K) float32, `detected_labels` (K) int32 indices into the labels. Every candidate takes its
/// best class (ARG_MAX: the lower index on ties), as in mltool.
///
/// NMS is NON_MAX_SUPPRESSION_V4 on the candidates sorted in mltool's order and ranked (`suppression` says why):
/// its rules are mltool's but one: it suppresses at IoU ≥ its IoU threshold where mltool suppresses above it, so it
/// is given the next float after mltool's (IoU ≥ next(t) ⟺ IoU > t). Per-class NMS with more than one class runs one
/// NMS per class over the ranks of the candidates whose best class it is (0 elsewhere), and a TOPK_V2 keeps the
/// `maxDetections` earliest in mltool's order of the boxes every class kept.
extension TFLiteLowering {
    static let detectionOutputs = ["detected_boxes", "detected_scores", "detected_labels"]

    /// Per-candidate tensors, in the decoder's candidate order: corners (1, B, 4), best score (1, B), its class
    /// (1, B) int32.
    struct Candidates {
        var corners: Int
        var score: Int
        var label: Int
        var count: Int
    }

    /// Appends the decoder and NMS after the lowered network and makes their results the subgraph's outputs; the
    /// input's batch is pinned to 1.
    mutating func lowerDetection(_ c: DetectionConfig) throws {
        if let input = program.inputs.first { program.tensors[input].signature = nil }
        var parts: [Candidates] = []
        switch c.decoder {
        case "anchorFree":
            for (i, h) in (c.heads ?? []).enumerated() {
                let shape = try shapeOf(h.tensor)
                guard shape.count == 4, shape[0] == 1, let head = index[h.tensor] else {
                    throw ExportError.invalid(model: modelName, place: "detection.heads[\(i)] '\(h.tensor)'",
                                              expected: "a rank-4 tensor of the graph (1, H, W, channels)", actual: "shape \(shape)")
                }
                parts.append(try anchorFreeHead(c, h, head: head, shape))
            }
        default:
            throw ExportError.unsupported(model: modelName, format: "TensorFlow Lite", place: "detection.decoder",
                                          reason: "decoder '\(c.decoder)' is not yet written as TFLite operators (anchorFree is); "
                                              + "export to ONNX instead")
        }
        guard !parts.isEmpty else {
            throw ExportError.invalid(model: modelName, place: "detection.heads", expected: "at least one head", actual: "none")
        }
        let all = joined(parts)
        let boxes = reshape(all.corners, [all.count, 4], .float32)
        let scores = reshape(all.score, [all.count], .float32)
        let labels = reshape(all.label, [all.count], .int32)
        let kept = try suppression(c.nms, classes: c.classCount, boxes: boxes, scores: scores, labels: labels, count: all.count)
        for head in program.outputs { program.tensors[head].signature = nil }
        program.outputs = []
        for (name, (source, columns, type)) in zip(Self.detectionOutputs, [(boxes, [4], ElementType.float32), (scores, [], .float32),
                                                                            (labels, [], .int32)]) {
            let out = gather(source, kept, [c.nms.maxDetections] + columns, type, signature: [-1] + columns)
            program.tensors[out].name = name
            program.outputs.append(out)
        }
    }

    typealias ElementType = TFLiteProgram.ElementType

    // MARK: Decoders

    /// (1, H, W, 4·bins + C) → corners (cell centre ∓ distance)·stride, score σ(max logit), class ARG_MAX; cells in
    /// (y, x) order. DFL distances: SOFTMAX over each side's bins, times the bin indices, summed.
    private mutating func anchorFreeHead(_ c: DetectionConfig, _ h: DetectionHead, head: Int, _ shape: [Int]) throws -> Candidates {
        let (bins, gh, gw, ch) = try c.anchorFreeLayout(h, shape, model: modelName)
        let cells = gh * gw
        let flat = reshape(head, [1, cells, ch], .float32)
        var distances = slice(flat, from: [0, 0, 0], size: [1, cells, 4 * bins])
        if bins > 1 {
            let sides = reshape(distances, [1, cells, 4, bins], .float32)
            let p = temp([1, cells, 4, bins])
            emit(.softmax, [sides], [p], .softmax, [.float(0, 1)])
            let weighted = binary(.mul, p, floats((0..<bins).map(Float.init), shape: [bins]), [1, cells, 4, bins])
            distances = temp([1, cells, 4])
            emit(.sum, [weighted, int32s([3])], [distances], .reducer, [.bool(0, false)])
        }
        var grid = [Float](repeating: 0, count: 4 * cells)
        for y in 0..<gh {
            for x in 0..<gw {
                let i = (y * gw + x) * 4, ax = Float(x) + 0.5, ay = Float(y) + 0.5
                grid[i] = ax; grid[i + 1] = ay; grid[i + 2] = ax; grid[i + 3] = ay
            }
        }
        // (a − d)·s as mltool computes it: a + (−d) is a − d exactly.
        let signed = binary(.mul, distances, floats([-1, -1, 1, 1], shape: [4]), [1, cells, 4])
        let centred = binary(.add, signed, floats(grid, shape: [1, cells, 4]), [1, cells, 4])
        let corners = binary(.mul, centred, floats([Float(h.stride)], shape: []), [1, cells, 4])
        let logits = slice(flat, from: [0, 0, 4 * bins], size: [1, cells, c.classCount])
        let (score, label) = bestClass(logits, cells: cells)
        let probability = temp([1, cells])
        emit(.logistic, [score], [probability], nil, [])
        return Candidates(corners: corners, score: probability, label: label, count: cells)
    }

    /// The best logit of each row of (1, B, C) and its index (the lower on ties), (1, B) each.
    private mutating func bestClass(_ logits: Int, cells: Int) -> (value: Int, index: Int) {
        let best = temp([1, cells]), label = temp([1, cells], .int32)
        emit(.reduceMax, [logits, int32s([2])], [best], .reducer, [.bool(0, false)])
        emit(.argMax, [logits, int32s([2])], [label], .argMax, [.int8(0, ElementType.int32.rawValue)])
        return (best, label)
    }

    /// The heads' candidates one after the other (CONCATENATION on axis 1 when there are several).
    private mutating func joined(_ parts: [Candidates]) -> Candidates {
        guard parts.count > 1 else { return parts[0] }
        let count = parts.reduce(0) { $0 + $1.count }
        let corners = temp([1, count, 4]), score = temp([1, count]), label = temp([1, count], .int32)
        for (out, part) in [(corners, \Candidates.corners), (score, \.score), (label, \.label)] {
            emit(.concatenation, parts.map { $0[keyPath: part] }, [out], .concatenation, [.int32(0, 1, default: 0), .int8(1, 0)])
        }
        return Candidates(corners: corners, score: score, label: label, count: count)
    }

    // MARK: Suppression

    /// The indices (K) int32 of the candidates NMS keeps, highest score first.
    ///
    /// NON_MAX_SUPPRESSION_V4 takes equal scores from a heap in no set order, and a letterboxed photo gives many equal
    /// scores (the padding's cells see the same values). So it never sees the scores: TOPK_V2 sorts the candidates
    /// in mltool's order (score descending, the lower index first on ties: TOPK_V2's rule too), and NMS gets the
    /// sorted boxes with the distinct ranks B − i (exact in float32 below 2^24) for the candidates above the
    /// threshold, 0 for the rest, and threshold 0; its picks (sorted positions) map back through the sort.
    private mutating func suppression(_ n: NMSSettings, classes: Int, boxes: Int, scores: Int, labels: Int, count: Int) throws -> Int {
        let place = "detection.nms"
        guard n.perClass || n.maxPerClass == nil else {
            throw ExportError.unsupported(model: modelName, format: "TensorFlow Lite", place: place + ".maxPerClass",
                                          reason: "a per-class limit with class-agnostic suppression is not yet supported")
        }
        let limit = min(n.maxPerClass ?? n.maxDetections, n.maxDetections)
        let (slots, overflow) = limit.multipliedReportingOverflow(by: n.perClass ? classes : 1)
        guard !overflow, slots <= Int(Int32.max), count < 1 << 24 else {
            throw ExportError.unsupported(model: modelName, format: "TensorFlow Lite", place: place,
                                          reason: "\(count) candidates, \(classes) classes × \(limit) boxes: above TFLite's int32 sizes "
                                              + "or 2^24 candidates (ranks exact in float32)")
        }
        let sortedScores = temp([count]), order = temp([count], .int32)
        emit(.topKV2, [scores, int32s([count], shape: [])], [sortedScores, order], .topKV2, [])
        let sortedBoxes = gather(boxes, order, [count, 4], .float32)
        let above = temp([count], .bool), zero = floats([0], shape: [])
        emit(.greater, [sortedScores, floats([n.confidenceThreshold], shape: [])], [above], .greater, [])
        let rankValues = (0..<count).map { Float(count - $0) }
        let ranks = select(above, floats(rankValues, shape: [count]), zero, [count])
        let iou = floats([n.iouThreshold.nextUp], shape: [])
        guard n.perClass, classes > 1 else {
            let (kept, valid) = nms(sortedBoxes, ranks, limit: limit, iou: iou, threshold: zero)
            let positions = leading(kept, count: reshape(valid, [1], .int32), max: limit)
            return gather(order, positions, [limit], .int32, signature: [-1])
        }
        let sortedLabels = gather(labels, order, [count], .int32)
        var kept: [Int] = [], valid: [Int] = [], masks: [Int] = []
        let slotIndices = int32s(Array(0..<limit))
        for k in 0..<classes {
            let mine = temp([count], .bool)
            emit(.equal, [sortedLabels, int32s([k], shape: [])], [mine], .equal, [])
            let (positions, number) = nms(sortedBoxes, select(mine, ranks, zero, [count]), limit: limit, iou: iou, threshold: zero)
            let inRange = temp([limit], .bool)
            emit(.less, [slotIndices, number], [inRange], .less, [])
            kept.append(positions); valid.append(reshape(number, [1], .int32)); masks.append(inRange)
        }
        // Every class's picks, earliest sorted position first (the highest rank; −1 in the unused slots).
        let allKept = concatenated(kept, [slots], .int32)
        let keptRanks = select(concatenated(masks, [slots], .bool), gather(ranks, allKept, [slots], .float32), floats([-1], shape: []), [slots])
        let k = min(n.maxDetections, slots)
        let bestRanks = temp([k]), best = temp([k], .int32)
        emit(.topKV2, [keptRanks, int32s([k], shape: [])], [bestRanks, best], .topKV2, [])
        let total = temp([1], .int32), capped = temp([1], .int32)
        emit(.sum, [concatenated(valid, [classes], .int32), int32s([0])], [total], .reducer, [.bool(0, true)])
        emit(.minimum, [total, int32s([n.maxDetections])], [capped], .maximumMinimum, [])
        let positions = gather(allKept, leading(best, count: capped, max: k), [k], .int32, signature: [-1])
        return gather(order, positions, [k], .int32, signature: [-1])
    }

    /// NON_MAX_SUPPRESSION_V4 over boxes (B, 4) and scores (B): selected indices (limit) int32, padded with 0, and
    /// their number (a scalar).
    private mutating func nms(_ boxes: Int, _ scores: Int, limit: Int, iou: Int, threshold: Int) -> (indices: Int, count: Int) {
        let indices = temp([limit], .int32), count = temp([], .int32)
        emit(.nonMaxSuppressionV4, [boxes, scores, int32s([limit], shape: []), iou, threshold], [indices, count], .nonMaxSuppressionV4, [])
        return (indices, count)
    }

    /// The first `count` (a (1) int32 tensor) elements of a vector: a SLICE whose size is computed, so dynamic.
    private mutating func leading(_ vector: Int, count: Int, max: Int) -> Int {
        let out = temp([max], program.tensors[vector].type, signature: [-1])
        emit(.slice, [vector, int32s([0]), count], [out], .slice, [])
        return out
    }

    // MARK: Helpers

    /// A computed tensor named under "detection/".
    private mutating func temp(_ shape: [Int], _ type: ElementType = .float32, signature: [Int]? = nil) -> Int {
        add(TFLiteProgram.Tensor(name: "detection/\(program.tensors.count)", shape: shape, signature: signature, type: type))
    }

    private mutating func reshape(_ x: Int, _ shape: [Int], _ type: ElementType) -> Int {
        let out = temp(shape, type)
        emit(.reshape, [x, int32s(shape)], [out], .reshape, [.ints(0, shape.map { Int32(clamping: $0) })])
        return out
    }

    private mutating func slice(_ x: Int, from begin: [Int], size: [Int]) -> Int {
        let out = temp(size, program.tensors[x].type)
        emit(.slice, [x, int32s(begin), int32s(size)], [out], .slice, [])
        return out
    }

    /// ADD, SUB, MUL or DIV of two float tensors (numpy broadcasting) into a tensor of `shape`.
    private mutating func binary(_ op: Op, _ a: Int, _ b: Int, _ shape: [Int]) -> Int {
        let out = temp(shape)
        let options: TFLiteProgram.OptionsType = [.add: .add, .sub: .sub, .mul: .mul, .div: .div][op] ?? .mul
        emit(op, [a, b], [out], options, [.int8(0, 0)])
        return out
    }

    /// GATHER along axis 0.
    private mutating func gather(_ x: Int, _ indices: Int, _ shape: [Int], _ type: ElementType, signature: [Int]? = nil) -> Int {
        let out = temp(shape, type, signature: signature)
        emit(.gather, [x, indices], [out], .gather, [.int32(0, 0, default: 0)])
        return out
    }

    /// SELECT_V2: `a` where `condition`, else `b` (broadcast).
    private mutating func select(_ condition: Int, _ a: Int, _ b: Int, _ shape: [Int]) -> Int {
        let out = temp(shape)
        emit(.selectV2, [condition, a, b], [out], .selectV2, [])
        return out
    }

    private mutating func concatenated(_ parts: [Int], _ shape: [Int], _ type: ElementType) -> Int {
        let out = temp(shape, type)
        emit(.concatenation, parts, [out], .concatenation, [.int32(0, 0, default: 0), .int8(1, 0)])
        return out
    }
}
