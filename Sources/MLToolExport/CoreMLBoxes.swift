import MLToolCore

/// Where a "boxes" detector's decoder tensors come from, for the Core ML export: the rank-4 feature maps
/// (1, H, W, C) that shape-only nodes (reshape, flatten, squeeze, unsqueeze, transpose, concat, slice, identity)
/// rearrange into the boxes (and scores) tensors, and for each element of those tensors the map element it copies.
///
/// `cut` finds the maps from the graph alone; the caller (`ModelExport`, which has the engine) learns the maps'
/// shapes and runs the shape-only nodes on index values — map m's element i holds `offset(m) + i` — so the
/// sources are the engine's own semantics of those nodes, not a second implementation of them.
public struct BoxesTrace: Equatable, Sendable {
    /// A feature map: a tensor the network computes, IR shape (1, H, W, C) when the export can use it.
    public struct Map: Equatable, Sendable {
        public var name: String
        public var shape: [Int]
        public init(name: String, shape: [Int]) { self.name = name; self.shape = shape }
    }

    /// A decoder tensor: its shape and, for each element (row-major), the index of the map element it holds among
    /// all maps' elements laid end to end (map 0's first, each map in its (N, H, W, C) order).
    public struct Source: Equatable, Sendable {
        public var shape: [Int]
        public var index: [Int]
        public init(shape: [Int], index: [Int]) { self.shape = shape; self.index = index }
    }

    public var maps: [Map]
    public var sources: [String: Source]

    public init(maps: [Map], sources: [String: Source]) { self.maps = maps; self.sources = sources }

    /// The ops that only move elements; a node with a fused activation is not one of them.
    static let shapeOnly: Set<Op> = [.reshape, .flatten, .squeeze, .unsqueeze, .transpose, .concat, .slice, .identity]

    /// Walks back from `tensors` through shape-only nodes with computed inputs: the tensors where the walk stops
    /// (the maps, first reached first) and the shape-only nodes passed, in graph order.
    public static func cut(_ graph: Graph, constants: Set<String>, from tensors: [String]) -> (maps: [String], nodes: [Node]) {
        var producer: [String: Int] = [:]
        for (i, n) in graph.nodes.enumerated() { for o in n.outputs { producer[o] = i } }
        var maps: [String] = [], chain = Set<Int>(), seen = Set<String>()
        func walk(_ t: String) {
            guard seen.insert(t).inserted else { return }
            if let i = producer[t], case let n = graph.nodes[i], shapeOnly.contains(n.op), n.attributes.activation == nil,
               !n.inputs.isEmpty, n.inputs.allSatisfy({ !constants.contains($0) }) {
                chain.insert(i)
                n.inputs.forEach(walk)
            } else {
                maps.append(t)
            }
        }
        tensors.forEach(walk)
        return (maps, chain.sorted().map { graph.nodes[$0] })
    }
}

/// A "boxes" decoder (a graph output already holding boxes, docs/FORMAT.md section 4.4) as classic Core ML layers,
/// giving the `raw_coordinates` / `raw_confidence` blobs of `CoreMLDetection.swift`.
///
/// The network is lowered up to the feature maps `BoxesTrace` found; the shape-only nodes after them are not lowered
/// but replaced. The candidates must come from the maps in runs of whole maps, each cell once in (y, x) order, each
/// column of a run from one channel of one map (checked on every element of the trace); then per run, per map a
/// 1×1 convolution picks (and linearly combines) the columns the decoder needs: centre and size (xyxy / yxyx: the
/// centre, and |x2 − x1| as relu(x2 − x1) + relu(x1 − x2)), divided by the input size unless `normalized`; the class
/// scores, through a sigmoid when `scoreActivation` says so, times the objectness column when there is one. The
/// runs are laid out with the anchor-free decoder's `rows` and concatenated in candidate order, which is therefore
/// the original's.
extension CoreMLLowering {
    /// One column of a run: channel `channel` of map `map` (an index into `BoxesTrace.maps`).
    private struct Column: Equatable {
        var map: Int, channel: Int
    }

    /// One value of a decoder tensor: element `offset` of map `map`, in the map's (1, H, W, C) order.
    private struct Element {
        var map: Int, offset: Int
    }

    /// A run of candidates: every cell of maps of one H × W grid, in (y, x) order; `columns` as in the table.
    private struct Run {
        var height: Int, width: Int
        var columns: [Column]
    }

    mutating func lowerBoxes(_ c: DetectionConfig, inputWidth: Int, inputHeight: Int, trace: BoxesTrace?) throws {
        guard let spec = c.boxes else {
            throw ExportError.invalid(model: modelName, place: "detection.boxes", expected: "present for decoder boxes", actual: "absent")
        }
        guard let trace else {
            throw ExportError.invalid(model: modelName, place: "detection.boxes '\(spec.tensor)'",
                                      expected: "the feature maps it is laid out from", actual: "no trace")
        }
        for m in trace.maps where m.shape.count != 4 || m.shape[0] != 1 {
            let node = graph.nodes.first { $0.outputs.contains(m.name) }
            throw ExportError.unsupported(
                model: modelName, format: "Core ML", place: "detection.boxes '\(spec.tensor)'",
                reason: "its values come from '\(m.name)' (\(node.map { "node '\($0.name)' (\($0.op.rawValue))" } ?? "no node"), shape \(m.shape)), "
                    + "which is not a feature map (1, H, W, C) that reshapes, transposes, concats and slices lay out as candidates "
                    + "(a decoder computed after the layout has no classic-layer form; export to ONNX instead)")
        }
        program.detector = CoreMLProgram.DetectorStage(boxes: 0, iouThreshold: Double(c.nms.iouThreshold),
                                                        confidenceThreshold: Double(c.nms.confidenceThreshold), perClass: c.nms.perClass)
        try lower(probabilities: false, upTo: trace.maps.map(\.name))
        for m in trace.maps where rank[m.name] != 4 {
            throw ExportError.unsupported(model: modelName, format: "Core ML", place: "detection.boxes '\(spec.tensor)'",
                                          reason: "its feature map '\(m.name)' is not a (C, H, W) blob after lowering")
        }

        let (values, width, count, classColumns) = try candidates(c, spec, trace)
        let runs = try self.runs(values, width: width, count: count, trace, tensor: spec.tensor)

        // Linear rows over the table's columns: coordinates (centre, size or corner differences), classes, objectness.
        let (centre, differences) = try coordinateRows(c, spec, inputWidth: inputWidth, inputHeight: inputHeight)
        let sigmoid = spec.scoreActivation == "sigmoid"
        var coordinates: [String] = [], confidences: [String] = [], total = 0
        for (r, run) in runs.enumerated() {
            let tag = "decode.\(r)", cells = run.height * run.width
            total += cells
            var box = try combine(run, centre, trace, tag + ".centre")
            if !differences.isEmpty {
                let d = try combine(run, differences, trace, tag + ".differences"), positive = fresh(tag + ".positive")
                let sizes = fresh(tag + ".sizes"), joined = fresh(tag + ".boxes")
                add(positive, [d], [positive], .activation(.relu))
                add(sizes, [positive], [sizes], conv1x1(outputs: 2, inputs: 4, weights: [1, 1, 0, 0, 0, 0, 1, 1]))
                add(joined, [box, sizes], [joined], .concat)
                box = joined
            }
            var scores = try combine(run, classColumns.map { [$0: 1] }, trace, tag + ".classes")
            if sigmoid { scores = activated(scores, tag + ".classes") }
            if spec.objectness && spec.scoresTensor == nil {
                // Objectness once per class, so that the multiply needs no broadcasting.
                var objectness = try combine(run, Array(repeating: [4: 1], count: c.classCount), trace, tag + ".objectness")
                if sigmoid { objectness = activated(objectness, tag + ".objectness") }
                let product = fresh(tag + ".scores")
                add(product, [scores, objectness], [product], .multiply)
                scores = product
            }
            coordinates.append(try rows(box, channels: 4, cells: cells))
            confidences.append(try rows(scores, channels: c.classCount, cells: cells))
        }
        program.detector?.boxes = total
        joinRows(coordinates: coordinates, confidences: confidences)
    }

    /// The candidates' table: per candidate b, the boxes tensor's K values, then the separate scores tensor's C; its
    /// width, candidate count and class-score columns.
    private func candidates(_ c: DetectionConfig, _ spec: BoxesOutput, _ trace: BoxesTrace) throws
        -> (values: [Element], width: Int, count: Int, classColumns: [Int]) {
        let boxes = try table(trace, spec.tensor, spec.layout == "nkb", field: "detection.boxes.tensor")
        var values = boxes.values, width = boxes.width
        let first = 4 + (spec.objectness ? 1 : 0)
        var classColumns = Array(first..<(first + c.classCount))
        if let s = spec.scoresTensor {
            let scores = try table(trace, s, spec.scoresLayout == "ncb", field: "detection.boxes.scoresTensor")
            guard scores.count == boxes.count else {
                throw ExportError.invalid(model: modelName, place: "detection.boxes.scoresTensor '\(s)'",
                                          expected: "\(boxes.count) boxes (as '\(spec.tensor)')", actual: "\(scores.count)")
            }
            guard scores.width == c.classCount else {
                throw ExportError.invalid(model: modelName, place: "detection.boxes.scoresTensor '\(s)'",
                                          expected: "\(c.classCount) class scores per box", actual: "\(scores.width)")
            }
            var joined: [Element] = []
            joined.reserveCapacity(values.count + scores.values.count)
            for b in 0..<boxes.count {
                joined += values[(b * width)..<((b + 1) * width)]
                joined += scores.values[(b * c.classCount)..<((b + 1) * c.classCount)]
            }
            values = joined
            classColumns = Array(width..<(width + c.classCount))
            width += c.classCount
        }
        guard width >= 4, classColumns.last.map({ $0 < width }) ?? false else {
            throw ExportError.invalid(model: modelName, place: "detection.boxes '\(spec.tensor)'",
                                      expected: "at least \(classColumns.last.map { $0 + 1 } ?? 4) values per box", actual: "\(boxes.width)")
        }
        return (values, width, boxes.count, classColumns)
    }

    /// The coordinates as linear rows over the table's columns: centre, and (for corner encodings) the differences
    /// whose positive parts sum to the size.
    private func coordinateRows(_ c: DetectionConfig, _ spec: BoxesOutput, inputWidth: Int,
                                inputHeight: Int) throws -> (centre: [[Int: Float]], differences: [[Int: Float]]) {
        let (sx, sy): (Float, Float) = spec.normalized ? (1, 1) : (1 / Float(inputWidth), 1 / Float(inputHeight))
        var centre: [[Int: Float]], differences: [[Int: Float]] = []
        switch c.boxEncoding {
        case "cxcywh":
            centre = [[0: sx], [1: sy], [2: sx], [3: sy]]
        case "xyxy", "yxyx":
            let (x1, y1, x2, y2) = c.boxEncoding == "xyxy" ? (0, 1, 2, 3) : (1, 0, 3, 2)
            centre = [[x1: sx / 2, x2: sx / 2], [y1: sy / 2, y2: sy / 2]]
            differences = [[x2: sx, x1: -sx], [x1: sx, x2: -sx], [y2: sy, y1: -sy], [y1: sy, y2: -sy]]
        default:
            throw ExportError.unsupported(model: modelName, format: "Core ML", place: "detection.boxEncoding",
                                          reason: "box encoding '\(c.boxEncoding)' is not yet supported")
        }
        return (centre, differences)
    }

    /// The decoder tensor `name` as a table (candidates × values) of map elements; `transposed` for a (1, K, B) layout.
    private func table(_ trace: BoxesTrace, _ name: String, _ transposed: Bool,
                       field: String) throws -> (values: [Element], count: Int, width: Int) {
        guard let s = trace.sources[name], s.shape.count == 3, s.shape[0] == 1, s.index.count == s.shape[1] * s.shape[2] else {
            throw ExportError.invalid(model: modelName, place: "\(field) '\(name)'", expected: "a traced (1, B, K) or (1, K, B) tensor",
                                      actual: trace.sources[name].map { "shape \($0.shape)" } ?? "no trace")
        }
        let (count, width) = transposed ? (s.shape[2], s.shape[1]) : (s.shape[1], s.shape[2])
        var offsets: [Int] = [], total = 0
        for m in trace.maps { offsets.append(total); total += m.shape.reduce(1, *) }
        var values: [Element] = []
        values.reserveCapacity(s.index.count)
        for b in 0..<count {
            for k in 0..<width {
                let i = s.index[transposed ? k * count + b : b * width + k]
                guard i >= 0, i < total, let m = offsets.lastIndex(where: { $0 <= i }) else {
                    throw ExportError.invalid(model: modelName, place: "\(field) '\(name)'", expected: "map elements", actual: "index \(i)")
                }
                values.append(Element(map: m, offset: i - offsets[m]))
            }
        }
        return (values, count, width)
    }

    /// Splits the candidates into runs of whole map grids in (y, x) order, every column one channel of one map.
    private func runs(_ values: [Element], width: Int, count: Int, _ trace: BoxesTrace, tensor: String) throws -> [Run] {
        var runs: [Run] = [], b0 = 0
        func refuse(_ b: Int, _ why: String) -> ExportError {
            .unsupported(model: modelName, format: "Core ML", place: "detection.boxes '\(tensor)' candidate \(b)",
                         reason: why + " (the classic-layer export lays candidates out as whole feature maps, cell by cell in row order; "
                            + "export to ONNX instead)")
        }
        while b0 < count {
            // The first candidate of a run sits at cell (0, 0) of every map it reads.
            var columns: [Column] = [], grid: (Int, Int)?
            for k in 0..<width {
                let e = values[b0 * width + k], shape = trace.maps[e.map].shape
                let (h, w, ch) = (shape[1], shape[2], shape[3])
                guard e.offset < ch else { throw refuse(b0, "value \(k) is not at the first cell of '\(trace.maps[e.map].name)'") }
                if let g = grid, g != (h, w) {
                    throw refuse(b0, "its values come from maps of different grids (\(g.0)×\(g.1) and \(h)×\(w))")
                }
                grid = (h, w)
                columns.append(Column(map: e.map, channel: e.offset))
            }
            guard let (h, w) = grid, b0 + h * w <= count else { throw refuse(b0, "the map's cells outnumber the remaining candidates") }
            for cell in 0..<(h * w) {
                for k in 0..<width {
                    let e = values[(b0 + cell) * width + k], ch = trace.maps[columns[k].map].shape[3]
                    guard e.map == columns[k].map, e.offset == cell * ch + columns[k].channel else {
                        throw refuse(b0 + cell, "value \(k) is not channel \(columns[k].channel) of cell (\(cell / w), \(cell % w)) "
                                        + "of '\(trace.maps[columns[k].map].name)'")
                    }
                }
            }
            runs.append(Run(height: h, width: w, columns: columns))
            b0 += h * w
        }
        return runs
    }

    /// Σ_k weight·column_k per output channel (one row per output, column index → weight) over a run: per map one
    /// 1×1 convolution, summed when the columns come from several maps.
    private mutating func combine(_ run: Run, _ rowsOut: [[Int: Float]], _ trace: BoxesTrace, _ tag: String) throws -> String {
        let used = Set(rowsOut.flatMap { $0.keys.map { run.columns[$0].map } }).sorted()
        var parts: [String] = []
        for m in used {
            let ch = trace.maps[m].shape[3]
            var w = [Float](repeating: 0, count: rowsOut.count * ch)
            for (o, row) in rowsOut.enumerated() {
                for (k, weight) in row where run.columns[k].map == m { w[o * ch + run.columns[k].channel] += weight }
            }
            let out = fresh(tag)
            add(out, [blob(trace.maps[m].name)], [out], conv1x1(outputs: rowsOut.count, inputs: ch, weights: w))
            parts.append(out)
        }
        if parts.count == 1 { return parts[0] }
        let sum = fresh(tag + ".sum")
        add(sum, parts, [sum], .add)
        return sum
    }

    private mutating func activated(_ x: String, _ tag: String) -> String {
        let y = fresh(tag + ".sigmoid")
        add(y, [x], [y], .activation(.sigmoid))
        return y
    }
}
