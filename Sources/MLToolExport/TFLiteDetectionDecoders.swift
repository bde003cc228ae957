import MLToolCore

/// The decoders of docs/FORMAT.md section 4.4 as TFLite builtin operators: each turns the network's outputs into
/// `Candidates` (corners, best score, its class) in the decoder's candidate order, which `TFLiteDetection.swift`
/// suppresses. Every step is the float32 operation `MLToolDetect.DetectionDecoder` performs, in its order (a − b/2 as
/// a SUB of a DIV, (2σ)² as a MUL of the doubled LOGISTIC by itself), so LiteRT's values differ from mltool's only by
/// its LOGISTIC and EXP kernels' rounding.
extension TFLiteLowering {
    /// The candidates of every head of a grid decoder ("anchorFree", "anchorGrid"), head after head; each head is a
    /// lowered tensor (1, H, W, channels).
    mutating func gridHeads(_ c: DetectionConfig) throws -> [Candidates] {
        var parts: [Candidates] = []
        for (i, h) in (c.heads ?? []).enumerated() {
            let shape = try shapeOf(h.tensor)
            guard shape.count == 4, shape[0] == 1, let head = named(h.tensor) else {
                throw ExportError.invalid(model: modelName, place: "detection.heads[\(i)] '\(h.tensor)'",
                                          expected: "a rank-4 tensor of the graph (1, H, W, channels)", actual: "shape \(shape)")
            }
            parts.append(c.decoder == "anchorGrid" ? try anchorGridHead(c, h, head: head, shape) : try anchorFreeHead(c, h, head: head, shape))
        }
        return parts
    }

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
        let shifted = binary(.add, signed, floats(grid, shape: [1, cells, 4]), [1, cells, 4])
        let corners = binary(.mul, shifted, floats([Float(h.stride)], shape: []), [1, cells, 4])
        let logits = slice(flat, from: [0, 0, 4 * bins], size: [1, cells, c.classCount])
        let (score, label) = bestClass(logits, cells: cells)
        return Candidates(corners: corners, score: logistic(score, [1, cells]), label: label, count: cells)
    }

    /// (1, H, W, A·(5 + C)) → candidates in (anchor, y, x) order (RESHAPE to (1, H·W, A, 5 + C), TRANSPOSE to
    /// (1, A, H·W, 5 + C), RESHAPE to rows): "yolov5" centre (2σ(t) − 0.5 + cell)·stride, size (2σ(t))²·anchor;
    /// "yolov3" centre (σ(t) + cell)·stride, size eᵗ·anchor; corners centre ∓ size / 2; score σ(objectness)·σ(max
    /// logit), class ARG_MAX.
    private mutating func anchorGridHead(_ c: DetectionConfig, _ h: DetectionHead, head: Int, _ shape: [Int]) throws -> Candidates {
        let l = try c.anchorGridLayout(h, shape, model: modelName)
        let no = 5 + c.classCount, cells = l.cells, count = l.anchors * cells
        let split = reshape(head, [1, cells, l.anchors, no], .float32)
        let moved = temp([1, l.anchors, cells, no])
        emit(.transpose, [split, int32s([0, 2, 1, 3])], [moved], .transpose, [])
        let rows = reshape(moved, [1, count, no], .float32)
        // Per candidate its cell (x, y) and its anchor's (width, height), as pairs.
        let cell = zip(l.cellX, l.cellY).flatMap { [$0, $1] }, size = zip(l.anchorWidth, l.anchorHeight).flatMap { [$0, $1] }
        let pair = [1, count, 2]
        let xy = logistic(slice(rows, from: [0, 0, 0], size: pair), pair)
        let wh = slice(rows, from: [0, 0, 2], size: pair)
        let grid = floats(cell, shape: pair), anchorSizes = floats(size, shape: pair), stride = scalar(Float(h.stride))
        let centre: Int, extent: Int
        if c.boxEncoding == "yolov5" {
            let shifted = binary(.sub, binary(.mul, xy, scalar(2), pair), scalar(0.5), pair)
            centre = binary(.mul, binary(.add, shifted, grid, pair), stride, pair)
            let doubled = binary(.mul, logistic(wh, pair), scalar(2), pair)
            extent = binary(.mul, binary(.mul, doubled, doubled, pair), anchorSizes, pair)
        } else {
            centre = binary(.mul, binary(.add, xy, grid, pair), stride, pair)
            let e = temp(pair)
            emit(.exp, [wh], [e], nil, [])
            extent = binary(.mul, e, anchorSizes, pair)
        }
        let corners = centred(centre, extent, count: count)
        let objectness = logistic(reshape(slice(rows, from: [0, 0, 4], size: [1, count, 1]), [1, count], .float32), [1, count])
        let (best, label) = bestClass(slice(rows, from: [0, 0, 5], size: [1, count, c.classCount]), cells: count)
        let score = binary(.mul, objectness, logistic(best, [1, count]), [1, count])
        return Candidates(corners: corners, score: score, label: label, count: count)
    }

    /// A graph output holding boxes, (1, B, K) "nbk" or (1, K, B) "nkb" (TRANSPOSEd to (1, B, K)), its class scores
    /// after the box values (and the objectness) or in a second output (1, B, C) "nbc" or (1, C, B) "ncb": score the
    /// REDUCE_MAX of the class values (LOGISTIC after it for "sigmoid"), times the objectness (LOGISTIC too);
    /// corners from "cxcywh" (centre ∓ size / 2), "xyxy" or "yxyx" (MINIMUM and MAXIMUM of the two points; for yxyx a
    /// GATHER puts x first), times the input's width and height when normalized.
    mutating func boxesOutput(_ c: DetectionConfig, inputWidth: Int, inputHeight: Int) throws -> Candidates {
        guard let spec = c.boxes else {
            throw ExportError.invalid(model: modelName, place: "detection.boxes", expected: "a BoxesOutput", actual: "none")
        }
        let classes = c.classCount, objectness = spec.objectness && spec.scoresTensor == nil
        let columns = spec.scoresTensor == nil ? 4 + (objectness ? 1 : 0) + classes : 4
        let values = try rows(spec.tensor, columns: columns, transposed: spec.layout == "nkb", place: "detection.boxes")
        let b = values.count
        let classValues: Int
        if let s = spec.scoresTensor {
            let scores = try rows(s, columns: classes, transposed: spec.scoresLayout == "ncb", place: "detection.boxes.scoresTensor")
            guard scores.count == b else {
                throw ExportError.invalid(model: modelName, place: "detection.boxes.scoresTensor '\(s)'", expected: "\(b) boxes",
                                          actual: "\(scores.count)")
            }
            classValues = scores.tensor
        } else {
            classValues = slice(values.tensor, from: [0, 0, columns - classes], size: [1, b, classes])
        }
        let sigmoid = spec.scoreActivation == "sigmoid"
        let best = bestClass(classValues, cells: b)
        var score = best.value
        if sigmoid { score = logistic(score, [1, b]) }
        if objectness {
            var o = reshape(slice(values.tensor, from: [0, 0, 4], size: [1, b, 1]), [1, b], .float32)
            if sigmoid { o = logistic(o, [1, b]) }
            score = binary(.mul, score, o, [1, b])
        }
        let pair = [1, b, 2]
        let first = slice(values.tensor, from: [0, 0, 0], size: pair), second = slice(values.tensor, from: [0, 0, 2], size: pair)
        var corners: Int
        switch c.boxEncoding {
        case "cxcywh":
            corners = centred(first, second, count: b)
        case "xyxy", "yxyx":
            let low = temp(pair), high = temp(pair)
            emit(.minimum, [first, second], [low], .maximumMinimum, [])
            emit(.maximum, [first, second], [high], .maximumMinimum, [])
            corners = concatenated([low, high], [1, b, 4], .float32, axis: 2)
            if c.boxEncoding == "yxyx" { corners = gather(corners, int32s([1, 0, 3, 2]), [1, b, 4], .float32, axis: 2) }
        default:
            throw ExportError.unsupported(model: modelName, format: "TensorFlow Lite", place: "detection.boxEncoding",
                                          reason: "box encoding '\(c.boxEncoding)' is not yet supported")
        }
        if spec.normalized {
            let (w, h) = (Float(inputWidth), Float(inputHeight))
            corners = binary(.mul, corners, floats([w, h, w, h], shape: [4]), [1, b, 4])
        }
        return Candidates(corners: corners, score: score, label: best.index, count: b)
    }

    // MARK: Steps

    /// A lowered rank-3 graph tensor (1, rows, columns), or (1, columns, rows) TRANSPOSEd to that when `transposed`.
    private mutating func rows(_ name: String, columns: Int, transposed: Bool, place: String) throws -> (tensor: Int, count: Int) {
        let shape = try shapeOf(name)
        guard shape.count == 3, shape[0] == 1, shape[transposed ? 1 : 2] == columns, shape[transposed ? 2 : 1] > 0,
              let t = named(name) else {
            throw ExportError.invalid(model: modelName, place: "\(place) '\(name)'",
                                      expected: "a tensor of the graph " + (transposed ? "(1, \(columns), boxes)" : "(1, boxes, \(columns))"),
                                      actual: "shape \(shape)")
        }
        let count = shape[transposed ? 2 : 1]
        guard transposed else { return (t, count) }
        let out = temp([1, count, columns])
        emit(.transpose, [t, int32s([0, 2, 1])], [out], .transpose, [])
        return (out, count)
    }

    /// Corners (1, B, 4) x1, y1, x2, y2 = centre − size / 2, centre + size / 2 from centres and sizes (1, B, 2).
    private mutating func centred(_ centre: Int, _ size: Int, count: Int) -> Int {
        let pair = [1, count, 2]
        let half = binary(.div, size, scalar(2), pair)
        return concatenated([binary(.sub, centre, half, pair), binary(.add, centre, half, pair)], [1, count, 4], .float32, axis: 2)
    }

    /// The best value of each row of (1, B, C) and its index (the lower on ties), (1, B) each.
    private mutating func bestClass(_ logits: Int, cells: Int) -> (value: Int, index: Int) {
        let best = temp([1, cells]), label = temp([1, cells], .int32)
        emit(.reduceMax, [logits, int32s([2])], [best], .reducer, [.bool(0, false)])
        emit(.argMax, [logits, int32s([2])], [label], .argMax, [.int8(0, ElementType.int32.rawValue)])
        return (best, label)
    }

    /// The heads' candidates one after the other (CONCATENATION on axis 1 when there are several).
    mutating func joined(_ parts: [Candidates]) -> Candidates {
        guard parts.count > 1 else { return parts[0] }
        let count = parts.reduce(0) { $0 + $1.count }
        let corners = concatenated(parts.map(\.corners), [1, count, 4], .float32, axis: 1)
        let score = concatenated(parts.map(\.score), [1, count], .float32, axis: 1)
        let label = concatenated(parts.map(\.label), [1, count], .int32, axis: 1)
        return Candidates(corners: corners, score: score, label: label, count: count)
    }

    /// LOGISTIC of a float tensor of `shape`.
    private mutating func logistic(_ x: Int, _ shape: [Int]) -> Int {
        let out = temp(shape)
        emit(.logistic, [x], [out], nil, [])
        return out
    }

    private mutating func scalar(_ value: Float) -> Int { floats([value], shape: []) }
}
