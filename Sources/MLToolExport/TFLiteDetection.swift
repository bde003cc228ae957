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

    /// Appends the decoder (`TFLiteDetectionDecoders.swift`) and NMS after the lowered network and makes their results
    /// the subgraph's outputs; the input's batch is pinned to 1. The input size scales normalized "boxes" coordinates.
    mutating func lowerDetection(_ c: DetectionConfig, inputWidth: Int, inputHeight: Int) throws {
        if let input = program.inputs.first { program.tensors[input].signature = nil }
        let parts: [Candidates]
        switch c.decoder {
        case "anchorFree", "anchorGrid":
            parts = try gridHeads(c)
        case "boxes":
            parts = [try boxesOutput(c, inputWidth: inputWidth, inputHeight: inputHeight)]
        default:
            throw ExportError.unsupported(model: modelName, format: "TensorFlow Lite", place: "detection.decoder",
                                          reason: "decoder '\(c.decoder)' is not yet supported")
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
    mutating func temp(_ shape: [Int], _ type: ElementType = .float32, signature: [Int]? = nil) -> Int {
        add(TFLiteProgram.Tensor(name: "detection/\(program.tensors.count)", shape: shape, signature: signature, type: type))
    }

    mutating func reshape(_ x: Int, _ shape: [Int], _ type: ElementType) -> Int {
        let out = temp(shape, type)
        emit(.reshape, [x, int32s(shape)], [out], .reshape, [.ints(0, shape.map { Int32(clamping: $0) })])
        return out
    }

    mutating func slice(_ x: Int, from begin: [Int], size: [Int]) -> Int {
        let out = temp(size, program.tensors[x].type)
        emit(.slice, [x, int32s(begin), int32s(size)], [out], .slice, [])
        return out
    }

    /// ADD, SUB, MUL or DIV of two float tensors (numpy broadcasting) into a tensor of `shape`.
    mutating func binary(_ op: Op, _ a: Int, _ b: Int, _ shape: [Int]) -> Int {
        let out = temp(shape)
        let options: TFLiteProgram.OptionsType = [.add: .add, .sub: .sub, .mul: .mul, .div: .div][op] ?? .mul
        emit(op, [a, b], [out], options, [.int8(0, 0)])
        return out
    }

    /// GATHER along `axis`.
    mutating func gather(_ x: Int, _ indices: Int, _ shape: [Int], _ type: ElementType, signature: [Int]? = nil, axis: Int = 0) -> Int {
        let out = temp(shape, type, signature: signature)
        emit(.gather, [x, indices], [out], .gather, [.int32(0, Int32(axis), default: 0)])
        return out
    }

    /// SELECT_V2: `a` where `condition`, else `b` (broadcast).
    mutating func select(_ condition: Int, _ a: Int, _ b: Int, _ shape: [Int]) -> Int {
        let out = temp(shape)
        emit(.selectV2, [condition, a, b], [out], .selectV2, [])
        return out
    }

    /// CONCATENATION along `axis`.
    mutating func concatenated(_ parts: [Int], _ shape: [Int], _ type: ElementType, axis: Int = 0) -> Int {
        let out = temp(shape, type)
        emit(.concatenation, parts, [out], .concatenation, [.int32(0, Int32(axis), default: 0), .int8(1, 0)])
        return out
    }
}
