import MLToolCore

/// An object detector's decoder and non-maximum suppression as ONNX operators after the network, so that the
/// exported graph gives the boxes `MLToolDetect.Detector` gives (docs/FORMAT.md section 4.4 defines both).
///
/// The graph takes one image (input batch 1) and has three outputs, K objects highest score first:
/// `detected_boxes` (K, 4) float32 corners x1, y1, x2, y2 in pixels of the model input (the letterboxed or resized
/// image, not the photo), `detected_scores` (K) float32, `detected_labels` (K) int64 indices into the `labels` of
/// `metadata_props`. Every candidate takes its best class (the lower index on ties), as in mltool; per-class NMS
/// gives ONNX NonMaxSuppression the candidate's score in its own class and 0 in the others, class-agnostic NMS one
/// class holding the best score; a TopK then keeps the `maxDetections` best of all classes.
extension ONNXLowering {
    static let detectionOutputs = ["detected_boxes", "detected_scores", "detected_labels"]

    /// Appends the decoder and NMS; `headShapes` gives every head tensor's IR shape (N, H, W, channels).
    mutating func lowerDetection(_ c: DetectionConfig, inputWidth: Int, inputHeight: Int, headShapes: [String: [Int]]) throws {
        if var first = program.inputs.first, first.dims.first == -1 {
            first.dims[0] = 1
            program.inputs[0] = first
        }
        // Per head: corners (1, 4, B), best score (1, B), its class (1, B) int64, in the decoder's candidate order.
        var parts: [(corners: String, score: String, label: String)] = []
        switch c.decoder {
        case "anchorFree", "anchorGrid":
            for (i, h) in (c.heads ?? []).enumerated() {
                guard rank[h.tensor] == 4, let shape = headShapes[h.tensor], shape.count == 4 else {
                    throw ExportError.invalid(model: modelName, place: "detection.heads[\(i)] '\(h.tensor)'",
                                              expected: "a rank-4 graph output (N, H, W, channels)",
                                              actual: headShapes[h.tensor].map { "shape \($0)" } ?? "no known shape")
                }
                parts.append(c.decoder == "anchorFree" ? try anchorFreeHead(c, h, shape) : try anchorGridHead(c, h, shape))
            }
        case "boxes":
            parts.append(try boxesOutput(c, inputWidth: inputWidth, inputHeight: inputHeight))
        default:
            throw ExportError.unsupported(model: modelName, format: "ONNX", place: "detection.decoder",
                                          reason: "decoder '\(c.decoder)' is not yet supported")
        }
        guard !parts.isEmpty else {
            throw ExportError.invalid(model: modelName, place: "detection.heads", expected: "at least one head", actual: "none")
        }
        let corners = parts.count == 1 ? parts[0].corners : op("Concat", parts.map(\.corners), [("axis", .int(2))])
        let score = parts.count == 1 ? parts[0].score : op("Concat", parts.map(\.score), [("axis", .int(1))])
        let label = parts.count == 1 ? parts[0].label : op("Concat", parts.map(\.label), [("axis", .int(1))])
        try suppression(c, corners: corners, score: score, label: label)
    }

    // MARK: Decoders

    /// (1, 4·bins + C, H, W) → corners (ax ∓ d)·stride from the cell centres, score σ(max logit), class argmax.
    private mutating func anchorFreeHead(_ c: DetectionConfig, _ h: DetectionHead,
                                         _ shape: [Int]) throws -> (corners: String, score: String, label: String) {
        let (bins, gh, gw, ch) = try c.anchorFreeLayout(h, shape, model: modelName)
        let cells = gh * gw
        let flat = op("Reshape", [h.tensor, int64s([1, ch, cells])])
        var distances = slice(flat, axis: 1, 0, 4 * bins)
        if bins > 1 {
            // DFL: softmax over each side's bins, then the expected bin index.
            let sides = op("Reshape", [distances, int64s([1, 4, bins, cells])])
            let p = op("Softmax", [sides], [("axis", .int(2))])
            let weighted = op("Mul", [p, floats((0..<bins).map(Float.init), dims: [1, 1, bins, 1])])
            distances = op("ReduceSum", [weighted, int64s([2])], [("keepdims", .int(0))])
        }
        let logits = slice(flat, axis: 1, 4 * bins, ch)
        var grid = [Float](repeating: 0, count: 4 * cells)
        for y in 0..<gh {
            for x in 0..<gw {
                let i = y * gw + x, ax = Float(x) + 0.5, ay = Float(y) + 0.5
                grid[i] = ax; grid[cells + i] = ay; grid[2 * cells + i] = ax; grid[3 * cells + i] = ay
            }
        }
        let signed = op("Mul", [distances, floats([-1, -1, 1, 1], dims: [1, 4, 1])])
        let centred = op("Add", [signed, floats(grid, dims: [1, 4, cells])])
        let corners = op("Mul", [centred, floatScalar(Float(h.stride))])
        let best = op("ReduceMax", [logits], [("axes", .ints([1])), ("keepdims", .int(0))])
        let score = op("Sigmoid", [best])
        let label = op("ArgMax", [logits], [("axis", .int(1)), ("keepdims", .int(0)), ("select_last_index", .int(0))])
        return (corners, score, label)
    }

    /// (1, A·(5 + C), H, W) → candidates in (anchor, y, x) order: YOLOv5's or YOLOv3's box formula, score
    /// σ(objectness)·σ(max logit).
    private mutating func anchorGridHead(_ c: DetectionConfig, _ h: DetectionHead,
                                         _ shape: [Int]) throws -> (corners: String, score: String, label: String) {
        let l = try c.anchorGridLayout(h, shape, model: modelName)
        let no = 5 + c.classCount, cells = l.cells, count = l.anchors * cells
        let split = op("Reshape", [h.tensor, int64s([1, l.anchors, no, cells])])
        let moved = op("Transpose", [split], [("perm", .ints([0, 2, 1, 3]))])
        let flat = op("Reshape", [moved, int64s([1, no, count])])
        let xy = op("Sigmoid", [slice(flat, axis: 1, 0, 2)])
        let wh = slice(flat, axis: 1, 2, 4)
        let grid = floats(l.cellX + l.cellY, dims: [1, 2, count]), sizes = floats(l.anchorWidth + l.anchorHeight, dims: [1, 2, count])
        let stride = floatScalar(Float(h.stride))
        let centre: String, size: String
        if c.boxEncoding == "yolov5" {
            let doubled = op("Mul", [xy, floatScalar(2)])
            centre = op("Mul", [op("Add", [op("Sub", [doubled, floatScalar(0.5)]), grid]), stride])
            let s = op("Mul", [op("Sigmoid", [wh]), floatScalar(2)])
            size = op("Mul", [op("Mul", [s, s]), sizes])
        } else {
            centre = op("Mul", [op("Add", [xy, grid]), stride])
            size = op("Mul", [op("Exp", [wh]), sizes])
        }
        let half = op("Div", [size, floatScalar(2)])
        let corners = op("Concat", [op("Sub", [centre, half]), op("Add", [centre, half])], [("axis", .int(1))])
        let objectness = op("Sigmoid", [op("Reshape", [slice(flat, axis: 1, 4, 5), int64s([1, count])])])
        let logits = slice(flat, axis: 1, 5, no)
        let best = op("Sigmoid", [op("ReduceMax", [logits], [("axes", .ints([1])), ("keepdims", .int(0))])])
        let score = op("Mul", [objectness, best])
        let label = op("ArgMax", [logits], [("axis", .int(1)), ("keepdims", .int(0)), ("select_last_index", .int(0))])
        return (corners, score, label)
    }

    /// A graph output that holds boxes: (1, B, K) or (1, K, B), optional separate scores.
    private mutating func boxesOutput(_ c: DetectionConfig, inputWidth: Int,
                                      inputHeight: Int) throws -> (corners: String, score: String, label: String) {
        guard let spec = c.boxes, rank[spec.tensor] == 3 else {
            throw ExportError.invalid(model: modelName, place: "detection.boxes", expected: "a rank-3 graph output",
                                      actual: c.boxes.map { "'\($0.tensor)'" } ?? "none")
        }
        let v = spec.layout == "nbk" ? op("Transpose", [spec.tensor], [("perm", .ints([0, 2, 1]))]) : spec.tensor
        let classes: String
        if let s = spec.scoresTensor {
            guard rank[s] == 3 else {
                throw ExportError.invalid(model: modelName, place: "detection.boxes.scoresTensor", expected: "a rank-3 graph output", actual: "'\(s)'")
            }
            classes = spec.scoresLayout == "nbc" ? op("Transpose", [s], [("perm", .ints([0, 2, 1]))]) : s
        } else {
            let first = 4 + (spec.objectness ? 1 : 0)
            classes = slice(v, axis: 1, first, first + c.classCount)
        }
        let sigmoid = spec.scoreActivation == "sigmoid"
        var score = op("ReduceMax", [classes], [("axes", .ints([1])), ("keepdims", .int(0))])
        if sigmoid { score = op("Sigmoid", [score]) }
        if spec.objectness && spec.scoresTensor == nil {
            var objectness = op("Reshape", [slice(v, axis: 1, 4, 5), int64s([1, -1])])
            if sigmoid { objectness = op("Sigmoid", [objectness]) }
            score = op("Mul", [score, objectness])
        }
        let label = op("ArgMax", [classes], [("axis", .int(1)), ("keepdims", .int(0)), ("select_last_index", .int(0))])
        let a = (0..<4).map { slice(v, axis: 1, $0, $0 + 1) }
        var corners: [String]
        switch c.boxEncoding {
        case "cxcywh":
            let hw = op("Div", [a[2], floatScalar(2)]), hh = op("Div", [a[3], floatScalar(2)])
            corners = [op("Sub", [a[0], hw]), op("Sub", [a[1], hh]), op("Add", [a[0], hw]), op("Add", [a[1], hh])]
        case "yxyx":
            corners = [op("Min", [a[1], a[3]]), op("Min", [a[0], a[2]]), op("Max", [a[1], a[3]]), op("Max", [a[0], a[2]])]
        case "xyxy":
            corners = [op("Min", [a[0], a[2]]), op("Min", [a[1], a[3]]), op("Max", [a[0], a[2]]), op("Max", [a[1], a[3]])]
        default:
            throw ExportError.unsupported(model: modelName, format: "ONNX", place: "detection.boxEncoding",
                                          reason: "box encoding '\(c.boxEncoding)' is not yet supported")
        }
        var joined = op("Concat", corners, [("axis", .int(1))])
        if spec.normalized {
            let (w, h) = (Float(inputWidth), Float(inputHeight))
            joined = op("Mul", [joined, floats([w, h, w, h], dims: [1, 4, 1])])
        }
        return (joined, score, label)
    }

    // MARK: Suppression

    /// NonMaxSuppression over corners (1, 4, B), scores (1, B) and classes (1, B), then the `maxDetections` best.
    private mutating func suppression(_ c: DetectionConfig, corners: String, score: String, label: String) throws {
        let n = c.nms
        let boxes = op("Transpose", [corners], [("perm", .ints([0, 2, 1]))])
        let perClassLimit: Int
        let nmsScores: String
        let scoreRow = op("Unsqueeze", [score, int64s([1])])
        if n.perClass {
            // Each candidate competes only in its own class: its score there, 0 elsewhere (below any threshold ≥ 0,
            // since NonMaxSuppression keeps scores strictly above score_threshold).
            let labelRow = op("Unsqueeze", [label, int64s([1])])
            let mask = op("Equal", [labelRow, int64Tensor(Array(0..<c.classCount), dims: [1, c.classCount, 1])])
            nmsScores = op("Where", [mask, scoreRow, floatScalar(0)])
            perClassLimit = min(n.maxPerClass ?? n.maxDetections, n.maxDetections)
        } else {
            guard n.maxPerClass == nil else {
                throw ExportError.unsupported(model: modelName, format: "ONNX", place: "detection.nms.maxPerClass",
                                              reason: "a per-class limit with class-agnostic suppression is not yet supported")
            }
            nmsScores = scoreRow
            perClassLimit = n.maxDetections
        }
        let selected = op("NonMaxSuppression", [boxes, nmsScores, int64s([perClassLimit]), floats([n.iouThreshold], dims: [1]),
                                                floats([n.confidenceThreshold], dims: [1])], [("center_point_box", .int(0))])
        let boxIndex = op("Reshape", [op("Gather", [selected, int64s([2])], [("axis", .int(1))]), int64s([-1])])
        let allScores = op("Reshape", [score, int64s([-1])])
        let keptScores = op("Gather", [allScores, boxIndex], [("axis", .int(0))])
        let k = op("Min", [op("Shape", [keptScores]), int64s([n.maxDetections])])
        let order = fresh("topk_indices"), best = fresh("topk_values")
        add("TopK", [keptScores, k], [best, order], node: order, [("axis", .int(0)), ("largest", .int(1)), ("sorted", .int(1))])
        let final = op("Gather", [boxIndex, order], [("axis", .int(0))])
        let names = Self.detectionOutputs
        add("Gather", [op("Reshape", [boxes, int64s([-1, 4])]), final], [names[0]], node: names[0], [("axis", .int(0))])
        add("Gather", [allScores, final], [names[1]], node: names[1], [("axis", .int(0))])
        add("Gather", [op("Reshape", [label, int64s([-1])]), final], [names[2]], node: names[2], [("axis", .int(0))])
        program.outputs = [
            .init(name: names[0], dims: [-3, 4]), .init(name: names[1], dims: [-3]),
            .init(name: names[2], dims: [-3], elemType: ONNXProgram.DataType.int64),
        ]
    }

    // MARK: Helpers

    /// One node with a fresh output name, returned.
    private mutating func op(_ type: String, _ inputs: [String], _ attributes: [(String, ONNXProgram.AttributeValue)] = []) -> String {
        let out = fresh(type.lowercased())
        add(type, inputs, [out], node: out, attributes)
        return out
    }

    /// x[start..<end] along `axis`.
    private mutating func slice(_ x: String, axis: Int, _ start: Int, _ end: Int) -> String {
        op("Slice", [x, int64s([start]), int64s([end]), int64s([axis])])
    }

    private mutating func floats(_ values: [Float], dims: [Int]) -> String {
        let name = fresh("const")
        program.initializers.append(.init(name: name, dataType: ONNXProgram.DataType.float, dims: dims, raw: floatBytes(values)))
        return name
    }

    private mutating func int64Tensor(_ values: [Int], dims: [Int]) -> String {
        let name = fresh("const")
        var raw = [UInt8]()
        for v in values { withUnsafeBytes(of: Int64(v).littleEndian) { raw += $0 } }
        program.initializers.append(.init(name: name, dataType: ONNXProgram.DataType.int64, dims: dims, raw: raw))
        return name
    }
}

extension DetectionConfig {
    /// An anchor-free head's bins per side and grid (height, width, channels) from its IR shape (N, H, W, channels),
    /// checked against the classes: what both exporters lay the decoder out from.
    func anchorFreeLayout(_ h: DetectionHead, _ shape: [Int], model: String) throws -> (bins: Int, height: Int, width: Int, channels: Int) {
        let bins = boxEncoding == "dfl" ? (regMax ?? 16) : 1
        guard shape.count == 4, shape[3] == 4 * bins + classCount else {
            throw ExportError.invalid(model: model, place: "head '\(h.tensor)'", expected: "(N, H, W, \(4 * bins + classCount))",
                                      actual: "\(shape)")
        }
        return (bins, shape[1], shape[2], shape[3])
    }

    /// An anchor-grid head's layout from its IR shape (N, H, W, A·(5 + C)), checked against its anchors and the
    /// classes: per candidate, in (anchor, y, x) order, its cell (x, y) and its anchor's size — what both exporters
    /// lay the decoder out from.
    func anchorGridLayout(_ h: DetectionHead, _ shape: [Int], model: String) throws
        -> (anchors: Int, cells: Int, cellX: [Float], cellY: [Float], anchorWidth: [Float], anchorHeight: [Float]) {
        let anchors = h.anchors ?? [], no = 5 + classCount
        guard shape.count == 4, !anchors.isEmpty, shape[3] == anchors.count * no, anchors.allSatisfy({ $0.count == 2 }) else {
            throw ExportError.invalid(model: model, place: "head '\(h.tensor)'", expected: "(N, H, W, \(anchors.count * no))",
                                      actual: "\(shape)")
        }
        let (gh, gw) = (shape[1], shape[2]), cells = gh * gw, count = anchors.count * cells
        var x = [Float](repeating: 0, count: count), y = x, w = x, hh = x
        for (a, anchor) in anchors.enumerated() {
            for row in 0..<gh {
                for column in 0..<gw {
                    let i = a * cells + row * gw + column
                    x[i] = Float(column); y[i] = Float(row); w[i] = anchor[0]; hh[i] = anchor[1]
                }
            }
        }
        return (anchors.count, cells, x, y, w, hh)
    }
}
