import MLToolCore

/// The decoder of an anchor-free detector ("ltrb" or "dfl") as classic Core ML layers after the network, giving what Core ML's
/// NonMaximumSuppression model (and Vision) read: `raw_confidence` (B, C) class scores in 0…1 and
/// `raw_coordinates` (B, 4) x-centre, y-centre, width, height as fractions of the model input's width and height
/// (origin top-left), B the cells of every head in mltool's candidate order (head, y, x).
///
/// Per head (a (4·bins + C, H, W) blob; DFL first turns each side's bins into a distance with a selecting 1×1
/// convolution, a softmax over channels and a 1×1 convolution weighting bin b by b): a 1×1 convolution turns the distances l, t, r, b into centre and size
/// (cx = (ax + (r − l)/2)·s/W, w = (l + r)·s/W, likewise y) plus a constant blob of the cell centres; another selects
/// the class logits for a sigmoid. Reshape and permute lay both out as (cells, K, 1); the heads are concatenated
/// along the channel axis and permuted to (1, B, K), which Core ML reports as the (B, K) arrays the NMS model takes.
extension CoreMLLowering {
    static let rawConfidence = "raw_confidence", rawCoordinates = "raw_coordinates"

    /// Lowers the network and the decoder; `headShapes` gives each head tensor's IR shape (N, H, W, channels), `boxes`
    /// where a "boxes" decoder's values come from (`CoreMLBoxes.swift`).
    mutating func lowerDetector(_ c: DetectionConfig, inputWidth: Int, inputHeight: Int, headShapes: [String: [Int]],
                                boxes: BoxesTrace?) throws {
        if c.decoder == "boxes" {
            return try lowerBoxes(c, inputWidth: inputWidth, inputHeight: inputHeight, trace: boxes)
        }
        guard c.decoder == "anchorFree", ["ltrb", "dfl"].contains(c.boxEncoding), let heads = c.heads, !heads.isEmpty else {
            throw ExportError.unsupported(model: modelName, format: "Core ML", place: "detection.decoder",
                                          reason: "decoder '\(c.decoder)' with box encoding '\(c.boxEncoding)' is not yet supported "
                                            + "(Core ML pipelines are written for anchorFree (ltrb, dfl) and boxes decoders; export to ONNX instead)")
        }
        let bins = c.boxEncoding == "dfl" ? (c.regMax ?? 16) : 1
        program.detector = CoreMLProgram.DetectorStage(boxes: 0, iouThreshold: Double(c.nms.iouThreshold),
                                                        confidenceThreshold: Double(c.nms.confidenceThreshold), perClass: c.nms.perClass)
        try lower(probabilities: false)
        let classes = c.classCount
        var coordinates: [String] = [], confidences: [String] = [], boxes = 0
        for (i, h) in heads.enumerated() {
            guard rank[h.tensor] == 4, let shape = headShapes[h.tensor], shape.count == 4, shape[3] == 4 * bins + classes else {
                throw ExportError.invalid(model: modelName, place: "detection.heads[\(i)] '\(h.tensor)'",
                                          expected: "a rank-4 graph output (N, H, W, \(4 * bins + classes))",
                                          actual: headShapes[h.tensor].map { "shape \($0)" } ?? "no known shape")
            }
            let (gh, gw, ch) = (shape[1], shape[2], shape[3])
            let cells = gh * gw
            boxes += cells
            let s = Float(h.stride), sx = s / Float(inputWidth), sy = s / Float(inputHeight)
            let head = blob(h.tensor), tag = "decode.\(i)"
            // The distances l, t, r, b: the head's first four channels, or (DFL) each side's expected bin index,
            // Σ b·softmax(bins)_b, by a selecting convolution, a softmax over channels and a weighting convolution.
            var distances = head, dc = ch
            if bins > 1 {
                var sides: [String] = []
                for side in 0..<4 {
                    var select = [Float](repeating: 0, count: bins * ch)
                    for b in 0..<bins { select[b * ch + side * bins + b] = 1 }
                    let picked = fresh(tag + ".side\(side)"), p = fresh(tag + ".softmax\(side)"), d = fresh(tag + ".distance\(side)")
                    add(picked, [head], [picked], conv1x1(outputs: bins, inputs: ch, weights: select))
                    add(p, [picked], [p], .softmax)
                    add(d, [p], [d], conv1x1(outputs: 1, inputs: bins, weights: (0..<bins).map(Float.init)))
                    sides.append(d)
                }
                distances = fresh(tag + ".distances")
                add(distances, sides, [distances], .concat)
                dc = 4
            }
            // OIHW 1×1 kernel over (l, t, r, b, …).
            var w = [Float](repeating: 0, count: 4 * dc)
            w[0 * dc + 0] = -sx / 2; w[0 * dc + 2] = sx / 2
            w[1 * dc + 1] = -sy / 2; w[1 * dc + 3] = sy / 2
            w[2 * dc + 0] = sx; w[2 * dc + 2] = sx
            w[3 * dc + 1] = sy; w[3 * dc + 3] = sy
            var centres = [Float](repeating: 0, count: 4 * cells)
            for y in 0..<gh {
                for x in 0..<gw {
                    centres[y * gw + x] = (Float(x) + 0.5) * sx
                    centres[cells + y * gw + x] = (Float(y) + 0.5) * sy
                }
            }
            let sizes = fresh(tag + ".offsets"), grid = fresh(tag + ".centres"), box = fresh(tag + ".boxes")
            add(sizes, [distances], [sizes], conv1x1(outputs: 4, inputs: dc, weights: w))
            add(grid, [], [grid], .loadConstant(shape: [4, gh, gw], values: centres))
            add(box, [sizes, grid], [box], .add)
            var select = [Float](repeating: 0, count: classes * ch)
            for k in 0..<classes { select[k * ch + 4 * bins + k] = 1 }
            let logits = fresh(tag + ".logits"), scores = fresh(tag + ".scores")
            add(logits, [head], [logits], conv1x1(outputs: classes, inputs: ch, weights: select))
            add(scores, [logits], [scores], .activation(.sigmoid))
            coordinates.append(try rows(box, channels: 4, cells: cells))
            confidences.append(try rows(scores, channels: classes, cells: cells))
        }
        program.detector?.boxes = boxes
        joinRows(coordinates: coordinates, confidences: confidences)
    }

    /// The outputs: each list's parts, (cells, K, 1) blobs, concatenated in order and permuted to (1, B, K).
    mutating func joinRows(coordinates: [String], confidences: [String]) {
        for (parts, name) in [(coordinates, Self.rawCoordinates), (confidences, Self.rawConfidence)] {
            let joined = parts.count == 1 ? parts[0] : fresh(name + ".joined")
            if parts.count > 1 { add(joined, parts, [joined], .concat) }
            add(name, [joined], [name], .permute([0, 3, 1, 2]))
        }
    }

    /// (K, H, W) → (H·W, K, 1): one channel per cell, in (y, x) order.
    mutating func rows(_ x: String, channels k: Int, cells: Int) throws -> String {
        let flat = fresh(x + ".flat"), moved = fresh(x + ".rows")
        add(flat, [x], [flat], .reshape([k, cells, 1]))
        add(moved, [flat], [moved], .permute([0, 2, 1, 3]))
        return moved
    }

    func conv1x1(outputs: Int, inputs: Int, weights: [Float]) -> CoreMLProgram.Kind {
        .convolution(outputChannels: outputs, kernelChannels: inputs, groups: 1, kernel: [1, 1], stride: [1, 1], dilation: [1, 1],
                     pads: [0, 0, 0, 0], weights: .float(weights), bias: nil)
    }
}
