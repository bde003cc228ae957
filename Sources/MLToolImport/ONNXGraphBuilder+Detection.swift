import MLToolCore

/// The ops detector exports add to a classifier's: Resize / Upsample (FPN upsampling), Split (C2f blocks, the
/// box/class split of a head), real strided slices, TopK, Pow (YOLOv5's (2σ)² box sizes) and Expand.
extension ONNXGraphBuilder {
    private func firstOutput(_ node: ONNXFile.Node) throws -> String {
        guard let o = node.outputs.first, !o.isEmpty else {
            throw ImportError.invalid(file: file, place: place(node), expected: "an output", actual: "none")
        }
        return o
    }

    // MARK: slices

    /// Emits "take `indices` along ONNX axis `axis`" as one IR `slice` when the indices are evenly spaced (any
    /// Slice, a Split part, a Gather of a range), else as the one-hot product of `emitTake`.
    mutating func emitSlice(_ nodeName: String, input: String, shape: [Int], takes: [(axis: Int, indices: [Int])], output: String) throws {
        let r = shape.count
        var axes: [Int] = [], starts: [Int] = [], steps: [Int] = [], counts: [Int] = []
        var progressions = true
        for t in takes {
            let step = t.indices.count > 1 ? t.indices[1] - t.indices[0] : 1
            if step == 0 || t.indices.indices.dropFirst().contains(where: { t.indices[$0] - t.indices[$0 - 1] != step }) {
                progressions = false
                break
            }
            axes.append(Layout.irAxis(t.axis, rank: r))
            starts.append(t.indices.first ?? 0); steps.append(step); counts.append(t.indices.count)
            if t.axis == 0 { batchFree = false }
        }
        if !progressions, r == 1, let t = takes.first {
            // A 1-D value (shape arithmetic, a plan-time value): a gather, which planning computes.
            let idx = addWeight(fresh("\(nodeName).indices"), shape: [t.indices.count], values: t.indices.map(Float.init))
            emit(nodeName, .gather, [input, idx], output, Attributes(axis: 0))
            shapes[output] = [t.indices.count]
            return
        }
        guard progressions else {
            // Uneven indices: one product per axis.
            var cur = input, s = shape
            for (k, t) in takes.enumerated() {
                let next = k == takes.count - 1 ? output : fresh("\(output).\(t.axis)")
                try emitTake(k == 0 ? nodeName : "\(nodeName).\(t.axis)", input: cur, shape: s, axis: t.axis, indices: t.indices, output: next)
                s[t.axis] = t.indices.count
                cur = next
            }
            return
        }
        var out = shape
        for t in takes { out[t.axis] = t.indices.count }
        if takes.isEmpty {
            emit(nodeName, .identity, [input], output)
        } else {
            emit(nodeName, .slice, [input], output, Attributes(axes: axes, starts: starts, steps: steps, counts: counts))
        }
        shapes[output] = out
    }

    /// Split: one slice per output along `axis`; sizes from the `split` input (opset 13+) or attribute, else
    /// `num_outputs` (opset 18: ⌈n / outputs⌉ each, the last smaller), else equal parts.
    mutating func split(_ node: ONNXFile.Node) throws {
        let x = try activation(node)
        let r = x.shape.count
        let axis = try normalize(int(node, "axis", 0), rank: r, node)
        let n = x.shape[axis]
        guard n >= 0 else {
            throw ImportError.invalid(file: file, place: place(node), expected: "axis \(axis) of known size", actual: "\(x.shape)")
        }
        var sizes: [Int]
        if let c = try optionalConstant(node, 1, what: "split") {
            sizes = c.ints.map { $0 ?? -1 }
        } else if let a = ints(node, "split") {
            sizes = a
        } else {
            let parts = node.attributes["num_outputs"]?.i ?? node.outputs.count
            guard parts >= 1, parts == node.outputs.count else {
                throw ImportError.invalid(file: file, place: "\(place(node)) num_outputs", expected: "\(node.outputs.count) (one per output)", actual: "\(parts)")
            }
            let chunk = opset >= 18 ? (n + parts - 1) / parts : n / parts
            guard opset >= 18 || n % parts == 0 else {
                throw ImportError.invalid(file: file, place: place(node), expected: "axis \(axis) (\(n)) divisible into \(parts) equal parts", actual: "\(x.shape)")
            }
            sizes = (0..<parts).map { min(chunk, max(0, n - $0 * chunk)) }
        }
        guard sizes.count == node.outputs.count, sizes.allSatisfy({ $0 >= 0 }), sizes.reduce(0, +) == n else {
            throw ImportError.invalid(file: file, place: "\(place(node)) split", expected: "\(node.outputs.count) sizes ≥ 0 adding up to \(n)",
                                      actual: "\(sizes)")
        }
        var start = 0
        for (k, out) in node.outputs.enumerated() {
            defer { start += sizes[k] }
            if out.isEmpty { continue }
            try emitSlice(k == 0 ? node.name : "\(node.name).\(k)", input: x.name, shape: x.shape,
                          takes: [(axis, Array(start..<(start + sizes[k])))], output: out)
        }
    }

    // MARK: resize

    /// Resize (opsets 10–19) and Upsample (7–9) of the two spatial axes of an (N, C, H, W) tensor.
    mutating func resize(_ node: ONNXFile.Node) throws {
        let x = try activation(node)
        let out = try firstOutput(node)
        guard x.shape.count == 4 else {
            throw ImportError.invalid(file: file, place: place(node), expected: "a 2-D (N, C, H, W) input", actual: "rank \(x.shape.count) \(x.shape)")
        }
        // A height or width known only at run time (-1) is resized by the engine per input size.
        let h = x.shape[2], w = x.shape[3]
        guard h != 0, w != 0 else {
            throw ImportError.invalid(file: file, place: place(node), expected: "a non-empty input height and width", actual: "\(x.shape)")
        }
        let (mode, coordinate, nearestMode) = try resizeModes(node)
        let (scales, sizes) = try resizeFactors(node)
        // Opset 18: `axes` names the axes the scales / sizes are for; the rest keep scale 1.
        let axes = try (ints(node, "axes") ?? [0, 1, 2, 3]).map { try normalize($0, rank: 4, node) }
        guard Set(axes).count == axes.count, (scales ?? []).count + (sizes ?? []).count == axes.count else {
            throw ImportError.invalid(file: file, place: "\(place(node)) scales / sizes", expected: "one value per axis \(axes)",
                                      actual: "scales \(scales ?? []), sizes \(sizes ?? [])")
        }
        let (scale, size) = try scales.map { try scaled(node, x.shape, axes, $0) } ?? sized(node, x.shape, axes, sizes ?? [])
        guard scales == nil || (scale[0] == 1 && scale[1] == 1), size[0] == x.shape[0], size[1] == x.shape[1] else {
            throw ImportError.invalid(file: file, place: place(node), expected: "a resize of height and width only (scale 1 on N and C)",
                                      actual: "scales \(scale), output \(size)")
        }
        let exclude = int(node, "exclude_outside", 0) == 1
        let antialias = int(node, "antialias", 0) == 1
        if antialias && mode == "nearest" {
            throw ImportError.invalid(file: file, place: "\(place(node)) antialias", expected: "0 with mode nearest", actual: "1")
        }
        // The coordinate transform divides by the given scales; with sizes it uses output / input exactly.
        let irScales: [Float]? = scales == nil ? nil : [Float(scale[2]), Float(scale[3])]
        emit(node.name, .resize, [x.name], out, Attributes(
            shape: size[2] < 0 || size[3] < 0 ? nil : [size[2], size[3]], alpha: float(node, "cubic_coeff_a", -0.75), mode: mode, scales: irScales,
            coordinateMode: coordinate, nearestMode: nearestMode, excludeOutside: exclude ? true : nil, antialias: antialias ? true : nil))
        shapes[out] = size
    }

    /// Resize before opset 11 and Upsample: asymmetric coordinates, floor for nearest.
    private func legacyResize(_ node: ONNXFile.Node) -> Bool { node.opType == "Upsample" || opset < 11 }

    /// The interpolation mode, coordinate transformation and nearest rounding, checked.
    private func resizeModes(_ node: ONNXFile.Node) throws -> (mode: String, coordinate: String, nearest: String) {
        let upsample = node.opType == "Upsample"
        let legacy = legacyResize(node)
        let mode = string(node, "mode", "nearest")
        var coordinate = legacy ? "asymmetric" : string(node, "coordinate_transformation_mode", "half_pixel")
        let nearestMode = legacy ? "floor" : string(node, "nearest_mode", "round_prefer_floor")
        guard ["nearest", "linear", "cubic"].contains(mode), !(legacy && mode == "cubic") else {
            throw ImportError.invalid(file: file, place: "\(place(node)) mode", expected: legacy ? "nearest or linear" : "nearest, linear or cubic",
                                      actual: mode)
        }
        if upsample && mode == "linear" { coordinate = "asymmetric" }
        let coordinates = ["half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn"]
        guard coordinates.contains(coordinate) else {
            throw ImportError.invalid(file: file, place: "\(place(node)) coordinate_transformation_mode",
                                      expected: coordinates.joined(separator: ", ") + " (tf_crop_and_resize is not supported)", actual: coordinate)
        }
        guard ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"].contains(nearestMode) else {
            throw ImportError.invalid(file: file, place: "\(place(node)) nearest_mode", expected: "round_prefer_floor, round_prefer_ceil, floor or ceil",
                                      actual: nearestMode)
        }
        return (mode, coordinate, nearestMode)
    }

    /// Scales / sizes per ONNX axis, from the inputs or (Upsample-7) the attribute: exactly one of them.
    private func resizeFactors(_ node: ONNXFile.Node) throws -> (scales: [Double]?, sizes: [Int]?) {
        let legacy = legacyResize(node)
        var scales: [Double]?, sizes: [Int]?
        if node.opType == "Upsample" && opset < 9 {
            scales = node.attributes["scales"]?.floats.map { Double($0) }
        } else {
            let scalesIndex = legacy ? 1 : 2
            if let c = try optionalConstant(node, scalesIndex, what: "scales"), !c.values.isEmpty { scales = c.values.map { Double(Float($0)) } }
            if !legacy, let c = try optionalConstant(node, 3, what: "sizes"), !c.values.isEmpty {
                sizes = try c.ints.map { v -> Int in
                    guard let v, v >= 0, v <= Self.maxWindow else {
                        throw ImportError.invalid(file: file, place: "\(place(node)) sizes", expected: "known sizes in 0…\(Self.maxWindow)", actual: "\(c.values)")
                    }
                    return v
                }
            }
        }
        guard (scales == nil) != (sizes == nil) else {
            throw ImportError.invalid(file: file, place: place(node), expected: "either scales or sizes", actual: scales == nil ? "neither" : "both")
        }
        return (scales, sizes)
    }

    /// The scale and output size per axis from scales (an output size known only at run time stays -1).
    private func scaled(_ node: ONNXFile.Node, _ shape: [Int], _ axes: [Int], _ scales: [Double]) throws -> (scale: [Double], size: [Int]) {
        var scale = [Double](repeating: 1, count: 4), size = shape
        guard scales.allSatisfy({ $0.isFinite && $0 > 0 }) else {
            throw ImportError.invalid(file: file, place: "\(place(node)) scales", expected: "finite values > 0", actual: "\(scales)")
        }
        for (i, a) in axes.enumerated() {
            scale[a] = scales[i]
            if shape[a] < 0 { size[a] = -1; continue }
            let s = (scales[i] * Double(shape[a])).rounded(.down)
            guard s <= Double(Self.maxWindow) else {
                throw ImportError.invalid(file: file, place: "\(place(node)) scales", expected: "an output of at most \(Self.maxWindow) per axis", actual: "\(scales)")
            }
            size[a] = Int(s)
        }
        return (scale, size)
    }

    /// The scale and output size per axis from sizes, under `keep_aspect_ratio_policy`.
    private func sized(_ node: ONNXFile.Node, _ shape: [Int], _ axes: [Int], _ sizes: [Int]) throws -> (scale: [Double], size: [Int]) {
        var scale = [Double](repeating: 1, count: 4), size = shape
        for (i, a) in axes.enumerated() where shape[a] >= 0 || a >= 2 {
            size[a] = sizes[i]
            scale[a] = shape[a] < 0 ? 0 : Double(sizes[i]) / Double(shape[a])
        }
        let policy = string(node, "keep_aspect_ratio_policy", "stretch")
        guard policy != "stretch" else { return (scale, size) }
        guard !axes.contains(where: { shape[$0] < 0 }) else {
            throw ImportError.invalid(file: file, place: "\(place(node)) keep_aspect_ratio_policy", expected: "stretch for a size known only at run time",
                                      actual: policy)
        }
        guard policy == "not_larger" || policy == "not_smaller" else {
            throw ImportError.invalid(file: file, place: "\(place(node)) keep_aspect_ratio_policy", expected: "stretch, not_larger or not_smaller", actual: policy)
        }
        let chosen = axes.map { scale[$0] }
        let s = policy == "not_larger" ? chosen.min() ?? 1 : chosen.max() ?? 1
        for a in axes { scale[a] = s; size[a] = Int(s * Double(shape[a]) + 0.5) }
        return (scale, size)
    }

    // MARK: others

    /// TopK: `values` and `indices` outputs as two IR nodes (the indices as float32 values).
    mutating func topK(_ node: ONNXFile.Node) throws {
        let x = try activation(node)
        let axis = try normalize(int(node, "axis", -1), rank: x.shape.count, node)
        let k: Int
        if opset < 10 {
            k = int(node, "k", -1)
        } else {
            let c = try constant(node, 1, what: "K")
            guard c.values.count == 1, let v = c.ints[0] else {
                throw ImportError.invalid(file: file, place: "\(place(node)) K", expected: "one known value", actual: "\(c.values)")
            }
            k = v
        }
        let n = x.shape[axis]
        guard k >= 0, n < 0 || k <= n else {
            throw ImportError.invalid(file: file, place: "\(place(node)) K", expected: "0…\(n)", actual: "\(k)")
        }
        if axis == 0 { batchFree = false }
        let largest = int(node, "largest", 1) == 1
        var out = x.shape
        out[axis] = k
        for (i, kind) in ["values", "indices"].enumerated() where i < node.outputs.count && !node.outputs[i].isEmpty {
            emit(i == 0 ? node.name : "\(node.name).indices", .topK, [x.name], node.outputs[i],
                 Attributes(axis: Layout.irAxis(axis, rank: x.shape.count), mode: kind, k: k, largest: largest ? nil : false))
            shapes[node.outputs[i]] = out
        }
    }

    /// Expand on a computed tensor: a product with ones of the broadcast shape (exact, NaN and ±0 kept).
    mutating func expand(_ node: ONNXFile.Node) throws {
        if node.inputs.count == 2, isPartial(node.inputs[1]) {
            return try runTimeExpand(node, x: 0, xShape: shape(of: node.inputs[0], in: node), targetName: node.inputs[1])
        }
        let x = try activation(node)
        let target = try constant(node, 1, what: "shape").ints.map { $0 ?? -1 }
        let out = try broadcast(x.shape, target, node)
        let padded = [Int](repeating: 1, count: out.count - x.shape.count) + x.shape
        let onesShape = out.indices.map { padded[$0] == out[$0] ? 1 : out[$0] }
        guard !onesShape.contains(where: { $0 < 0 }) else {
            throw ImportError.invalid(file: file, place: "\(place(node)) shape", expected: "known dimensions", actual: "\(target)")
        }
        let count = Self.product(onesShape[...])
        guard count <= Self.maxTakeEntries else {
            throw ImportError.invalid(file: file, place: place(node), expected: "an expansion of at most \(Self.maxTakeEntries) elements", actual: "\(out)")
        }
        if onesShape.first.map({ $0 != 1 }) ?? false { batchFree = false }
        let ones = fresh("\(node.name).ones")
        constants[ones] = ONNXConstant(shape: onesShape, values: [Double](repeating: 1, count: count))
        var mul = node
        mul.inputs = [x.name, ones]
        try binary(mul, .mul)
    }
}

// MARK: detectors

extension ONNXGraphBuilder {
    /// The registry entry of NonMaxSuppression: the importer lifts it out of the graph (`detectionFromNMS`), so a
    /// conversion is never asked for.
    func nonMaxSuppression(_ node: ONNXFile.Node) throws {
        throw ImportError.invalid(file: file, place: place(node), expected: "NonMaxSuppression at the end of the graph", actual: "inside it")
    }

    /// A graph ending in NonMaxSuppression(boxes (N, B, 4), scores (N, C, B), max_output_boxes_per_class,
    /// iou_threshold, score_threshold): the graph stops at its inputs and the rest becomes detection settings
    /// (decoder "boxes", corners y1 x1 y2 x2 or centre x y w h by center_point_box). Returns them with the
    /// new graph outputs, boxes and scores.
    func detectionFromNMS(_ node: ONNXFile.Node, graphOutputs: [String]) throws -> (DetectionConfig, [String]) {
        guard let selected = node.outputs.first, graphOutputs == [selected] else {
            throw ImportError.invalid(file: file, place: place(node), expected: "its selected indices as the only graph output",
                                      actual: "graph outputs \(graphOutputs)")
        }
        guard node.inputs.count >= 2 else {
            throw ImportError.invalid(file: file, place: place(node), expected: "boxes and scores inputs", actual: "\(node.inputs.count) inputs")
        }
        let boxes = node.inputs[0], scores = node.inputs[1]
        let bs = try shape(of: boxes, in: node), ss = try shape(of: scores, in: node)
        guard shapes[boxes] != nil, shapes[scores] != nil else {
            throw ImportError.invalid(file: file, place: place(node), expected: "boxes and scores computed by the graph", actual: "constants")
        }
        guard bs.count == 3, bs[2] == 4, ss.count == 3, ss[2] < 0 || bs[1] < 0 || ss[2] == bs[1] else {
            throw ImportError.invalid(file: file, place: place(node), expected: "boxes (N, B, 4) and scores (N, C, B)", actual: "\(bs) and \(ss)")
        }
        let maxPerClass = try optionalConstant(node, 2, what: "max_output_boxes_per_class")?.ints.first ?? 0
        let iou = try optionalConstant(node, 3, what: "iou_threshold")?.scalar ?? 0
        let score = try optionalConstant(node, 4, what: "score_threshold")?.scalar ?? 0
        guard let perClass = maxPerClass, perClass >= 1 else {
            throw ImportError.invalid(file: file, place: "\(place(node)) max_output_boxes_per_class", expected: "≥ 1", actual: "\(maxPerClass ?? -1)")
        }
        guard iou >= 0, iou <= 1, score >= 0, score <= 1 else {
            throw ImportError.invalid(file: file, place: place(node), expected: "iou_threshold and score_threshold in 0…1", actual: "\(iou), \(score)")
        }
        let center = int(node, "center_point_box", 0)
        guard center == 0 || center == 1 else {
            throw ImportError.invalid(file: file, place: "\(place(node)) center_point_box", expected: "0 or 1", actual: "\(center)")
        }
        let classes = ss[1]
        guard classes >= 1 else {
            throw ImportError.invalid(file: file, place: place(node), expected: "a known class count (scores (N, C, B))", actual: "\(ss)")
        }
        let batch = max(bs[0], 1)
        let nms = NMSSettings(iouThreshold: Float(iou), confidenceThreshold: Float(score), perClass: true,
                              maxDetections: min(1_000_000, max(1, perClass * classes * batch)), maxPerClass: perClass)
        let config = DetectionConfig(decoder: "boxes", classCount: classes, boxEncoding: center == 1 ? "cxcywh" : "yxyx",
                                     boxes: BoxesOutput(tensor: boxes, layout: "nbk", scoresTensor: scores, scoresLayout: "ncb"), nms: nms)
        return (config, [boxes, scores])
    }

    /// Checks detection settings against the graph: the format's rules, then each tensor's shape (ONNX layout) for
    /// the decoder, heads of input size / stride when both are known.
    func checkDetection(_ d: DetectionConfig, outputs: [String], labels: [String], input: [Int]) throws {
        if let p = d.problem(outputs: outputs, labels: labels) {
            throw ImportError.invalid(file: file, place: "detection \(p.field)", expected: p.expected, actual: p.actual)
        }
        func fail(_ what: String, _ expected: String, _ actual: [Int]) -> ImportError {
            .invalid(file: file, place: "detection \(what)", expected: expected, actual: "\(actual)")
        }
        let c = d.classCount
        for (i, h) in (d.heads ?? []).enumerated() {
            let s = shapes[h.tensor] ?? []
            let channels = d.decoder == "anchorGrid" ? (h.anchors?.count ?? 0) * (5 + c) : (d.regMax ?? 1) * 4 + c
            guard s.count == 4, s[1] == channels else {
                throw fail("heads[\(i)] '\(h.tensor)'", "(N, \(channels), H, W)", s)
            }
            // IR input (N, H, W, C): a head at stride s has H / s × W / s cells (rounded up: padded convs).
            if input.count == 4, input[1] > 0, input[2] > 0, s[2] >= 0, s[3] >= 0 {
                let gh = (input[1] + h.stride - 1) / h.stride, gw = (input[2] + h.stride - 1) / h.stride
                guard s[2] == gh, s[3] == gw else {
                    throw fail("heads[\(i)] '\(h.tensor)'", "a \(gh)×\(gw) grid (input \(input[1])×\(input[2]), stride \(h.stride))", s)
                }
            }
        }
        if let b = d.boxes {
            let s = shapes[b.tensor] ?? []
            let k = 4 + (b.scoresTensor == nil ? (b.objectness ? 1 : 0) + c : 0)
            let axis = b.layout == "nbk" ? 2 : 1
            guard s.count == 3, s[axis] == k else {
                throw fail("boxes '\(b.tensor)'", b.layout == "nbk" ? "(N, boxes, \(k))" : "(N, \(k), boxes)", s)
            }
            if let st = b.scoresTensor {
                let t = shapes[st] ?? []
                let (ca, ba) = b.scoresLayout == "nbc" ? (2, 1) : (1, 2)
                guard t.count == 3, t[ca] == c, t[ba] < 0 || s[3 - axis] < 0 || t[ba] == s[3 - axis] else {
                    throw fail("boxes.scoresTensor '\(st)'", b.scoresLayout == "nbc" ? "(N, boxes, \(c))" : "(N, \(c), boxes)", t)
                }
            }
        }
    }
}
