import MLToolCore

/// Shapes known only at run time (issue 48, item 3). Shape arithmetic folds at import as before; where a dimension
/// is free, `Shape` gives NaN for it and what follows from it is a *run-time constant* (`runTime`): known in part
/// at import, and computed in the graph (IR `shape` and the ops after it: plan-time values, docs/FORMAT.md) where
/// an op needs its value — a Reshape's or Expand's target, ConstantOfShape's shape.
extension ONNXGraphBuilder {
    /// Ops whose folded result keeps NaN exactly where an unknown input value flows: their run-time constants stay
    /// known in part. Any other op on an unknown value gives a wholly unknown result (NaN == 1 is false, not unknown).
    static let nanPropagating: Set<String> = ["Shape", "Identity", "Dropout", "Cast", "Unsqueeze", "Squeeze", "Reshape", "Flatten",
                                              "Concat", "Gather", "Slice", "Expand", "Transpose", "Add", "Sub", "Mul",
                                              "Div", "Neg", "Floor", "Ceil", "Sqrt", "Min", "Max", "Pow", "Equal", "Less",
                                              "Greater", "Where", "Not"]

    /// Ops whose result is the input's shape or size: unknown only where a dimension is.
    static let shapeReading: Set<String> = ["Shape", "Size"]

    /// Inputs (by position) that set the shape of an op's result: with an unknown value there, the op cannot fold.
    static let shapeSetting: [String: Set<Int>] = [
        "Reshape": [1], "Expand": [1], "ConstantOfShape": [0], "Range": [0, 1, 2], "Tile": [1], "Gather": [1],
        "Slice": [1, 2, 3, 4], "Resize": [1, 2, 3], "Upsample": [1], "Pad": [1, 2, 3], "Squeeze": [1], "Unsqueeze": [1],
        "TopK": [1], "Split": [1], "OneHot": [1], "GatherElements": [1], "GatherND": [1], "ScatterND": [1],
    ]

    /// Whether `name` is a run-time constant with a value unknown at import.
    func isPartial(_ name: String) -> Bool {
        runTime[name] != nil && (constants[name]?.values.contains(where: \.isNaN) ?? false)
    }

    /// Whether `node` reads an unknown value where it sets its result's shape (then it does not fold).
    func hasRunTimeShape(_ node: ONNXFile.Node) -> Bool {
        (Self.shapeSetting[node.opType] ?? []).contains { $0 < node.inputs.count && isPartial(node.inputs[$0]) }
    }

    /// `result` of folding `node`, recorded as a run-time constant when it follows from one (wholly unknown when
    /// the op does not carry unknown values through: `nanPropagating`).
    mutating func recordRunTime(_ node: ONNXFile.Node, _ result: ONNXConstant) -> ONNXConstant {
        // Shape and Size read only the input's shape, which a run-time constant knows.
        let unknown = Self.shapeReading.contains(node.opType) ? result.values.contains(where: \.isNaN) : node.inputs.contains(where: isPartial)
        guard unknown, let out = node.outputs.first else { return result }
        runTime[out] = node
        guard !Self.nanPropagating.contains(node.opType) else { return result }
        var r = result
        r.values = r.values.map { _ in .nan }
        return r
    }

    /// `node` with each run-time constant it reads as data (not where it sets a shape) replaced by the graph value
    /// that computes it.
    mutating func withRunTimeInputs(_ node: ONNXFile.Node) throws -> ONNXFile.Node {
        var n = node
        let setting = Self.shapeSetting[node.opType] ?? []
        for i in n.inputs.indices where !setting.contains(i) && isPartial(n.inputs[i]) { n.inputs[i] = try materialize(n.inputs[i]) }
        return n
    }

    /// The graph value computing run-time constant `name` (emitted once): IR `shape` for a Shape node, else the
    /// node itself converted on the graph values of its run-time inputs. A name that is not a run-time constant
    /// with an unknown value is returned as it is.
    mutating func materialize(_ name: String) throws -> String {
        if let m = materialized[name] { return m }
        guard isPartial(name), let node = runTime[name], let c = constants[name] else { return name }
        // Shape arithmetic never mixes batch items, whatever reshapes it goes through.
        let keep = batchFree
        defer { batchFree = keep }
        let out = fresh("\(name).value")
        if node.opType == "Shape" {
            let x = try activation(node)
            let r = x.shape.count
            let start = min(max(int(node, "start", 0) < 0 ? int(node, "start", 0) + r : int(node, "start", 0), 0), r)
            let end = min(max(int(node, "end", r) < 0 ? int(node, "end", r) + r : int(node, "end", r), 0), r)
            let axes = start < end ? Array(start..<end) : []
            emit(fresh("\(node.name).value"), .shape, [x.name], out, Attributes(perm: axes.map { Layout.irAxis($0, rank: r) }))
            shapes[out] = [axes.count]
        } else {
            guard let converter = ONNXOps.converters[node.opType] else {
                throw ImportError.unsupported(file: file, ops: [.init(op: node.opType, count: 1, firstNodes: [node.name])])
            }
            var n = node
            n.name = fresh("\(node.name).value")
            n.inputs = try node.inputs.map { $0.isEmpty ? $0 : try materialize($0) }
            // ONNX divides integers toward zero.
            let truncated = node.opType == "Div" && c.isInteger
            let direct = truncated ? fresh("\(name).quotient") : out
            n.outputs = [direct]
            try converter(&self, n)
            if truncated {
                emit("\(n.name).trunc", .unary, [direct], out, Attributes(mode: UnaryFunction.trunc.rawValue))
                shapes[out] = shapes[direct]
            }
        }
        materialized[name] = out
        return out
    }

    /// Output sizes of a SAME_* window over the spatial axes of `x` (N, C, H, W): ⌈n / stride⌉, -1 when unknown.
    static func sameSizes(_ x: [Int], _ strides: [Int]) -> [Int] {
        (0..<2).map { x[2 + $0] < 0 ? -1 : (x[2 + $0] + strides[$0] - 1) / strides[$0] }
    }

    /// A conv or pool whose SAME_* pads follow from a size known only at run time: the IR node pads itself.
    func automaticPads(_ attrs: inout Attributes, _ node: ONNXFile.Node) {
        attrs.pads = nil
        attrs.autoPad = string(node, "auto_pad", "SAME_UPPER")
    }
}

// MARK: ops whose result's shape is a run-time value

extension ONNXGraphBuilder {
    /// Reshape to `to` with more than one dimension unknown at import, which the IR's inference (one -1) cannot
    /// fill in: a target known only at run time is read from the graph value computing it; a constant one keeps
    /// ONNX's 0 ("copy the input's dimension"), which the IR reshape reads alike. Either way the IR reshape runs on
    /// NCHW-ordered data, so that its indices are ONNX's.
    mutating func reshapeWithFreeDimensions(_ node: ONNXFile.Node, _ x: (name: String, shape: [Int]), to: [Int]) throws {
        let spec = try constant(node, 1, what: "shape")
        var inputs = [x.name], attrs = Attributes()
        if isPartial(node.inputs[1]) {
            inputs.append(try materialize(node.inputs[1]))
        } else {
            attrs.shape = spec.ints.map { $0 ?? -1 }
        }
        let copies = spec.ints.enumerated().filter { $0.element == 0 }.map(\.offset)
        guard int(node, "allowzero", 0) == 0 || copies.isEmpty else {
            throw ImportError.invalid(file: file, place: "\(place(node)) allowzero", expected: "0 for a reshape of sizes known only at run time", actual: "1")
        }
        let out = try outputName(node)
        if x.shape.count == 4 {
            inputs[0] = fresh("\(x.name).nchw")
            emit("\(node.name).to_nchw", .transpose, [x.name], inputs[0], Attributes(perm: Layout.toNCHW))
        }
        if to.count == 4 {
            let mid = fresh("\(out).nchw")
            emit(node.name, .reshape, inputs, mid, attrs)
            emit("\(node.name).to_nhwc", .transpose, [mid], out, Attributes(perm: Layout.toNHWC))
        } else {
            emit(node.name, .reshape, inputs, out, attrs)
        }
        shapes[out] = to
    }

    /// Expand (and ConstantOfShape, an expand of its one value) to a target known only at run time: `x` is input
    /// `index` of `node` (computed or constant), `targetName` the ONNX target.
    mutating func runTimeExpand(_ node: ONNXFile.Node, x index: Int, xShape: [Int], targetName: String) throws {
        guard let spec = constants[targetName], spec.rank == 1 else {
            throw ImportError.invalid(file: file, place: "\(place(node)) shape", expected: "a 1-D shape", actual: "'\(targetName)'")
        }
        let known = spec.ints.map { $0 ?? -1 }
        // Where the target is unknown the result is x's dimension unless that is 1 (then unknown too).
        let outShape = try broadcast(xShape, known, node)
        let rank = outShape.count
        guard known.count == rank else {
            throw ImportError.invalid(file: file, place: "\(place(node)) shape", expected: "a target of x's rank or more", actual: "\(known.count) values for x \(xShape)")
        }
        let xName = try rankedOperand(node, index, shape: xShape, outRank: rank)
        var target = try materialize(targetName)
        if rank == 4 {
            // The target is in ONNX order: read it in the IR's (N, H, W, C).
            let order = addWeight(fresh("\(node.name).nhwc_order"), shape: [4], values: Layout.nhwcToNchw.map(Float.init))
            let permuted = fresh("\(target).nhwc")
            emit("\(node.name).target_nhwc", .gather, [target, order], permuted, Attributes(axis: 0))
            shapes[permuted] = [4]
            target = permuted
        }
        let out = try outputName(node)
        emit(node.name, .expand, [xName, target], out)
        shapes[out] = outShape
    }

    /// ConstantOfShape on a shape known only at run time (the folder takes every other).
    mutating func constantOfShape(_ node: ONNXFile.Node) throws {
        guard let shapeName = node.inputs.first, isPartial(shapeName) else { return try foldOnly(node) }
        let value = node.attributes["value"]?.t?.values.first ?? 0
        var n = node
        let v = fresh("\(node.name).value")
        constants[v] = ONNXConstant(shape: [1], values: [value])
        n.inputs = [v, shapeName]
        try runTimeExpand(n, x: 0, xShape: [1], targetName: shapeName)
    }
}

extension ONNXGraphBuilder {
    /// A Slice along an axis whose size is known only at run time: the IR slice keeps ONNX's bounds and resolves
    /// them per input size (`ends`).
    /// A Slice whose starts or ends follow from a dimension known only at run time (`x[:, :n]` with n a size;
    /// `position_ids[:, :seq]`, a constant buffer sliced to the sequence length): an IR slice taking them as
    /// plan-time inputs (axes and steps known at import).
    mutating func sliceWithRunTimeBounds(_ node: ONNXFile.Node) throws {
        guard let output = node.outputs.first, !output.isEmpty else {
            throw ImportError.invalid(file: file, place: place(node), expected: "an output", actual: "none")
        }
        let shape = try shape(of: node.inputs[0], in: node)
        let x = (name: try operand(node, 0, rank: shape.count), shape: shape)
        let r = x.shape.count
        let count = constants[node.inputs[1]]?.values.count ?? 0
        let axes = try optionalConstant(node, 3, what: "axes")?.ints ?? (0..<count).map { $0 }
        let steps = try optionalConstant(node, 4, what: "steps")?.ints ?? [Int?](repeating: 1, count: count)
        let axisList = axes.compactMap { $0 }, stepList = steps.compactMap { $0 }
        guard axisList.count == count, axes.count == count, stepList.count == count, steps.count == count,
              constants[node.inputs[2]]?.values.count == count, !stepList.contains(0) else {
            throw ImportError.invalid(file: file, place: place(node), expected: "starts, ends, axes and non-zero steps of one length, axes and steps known",
                                      actual: "\(count) starts, axes \(axes), steps \(steps)")
        }
        let normalized = try axisList.map { try normalize($0, rank: r, node) }
        let bounds = try [1, 2].map { i -> String in
            if isPartial(node.inputs[i]) { return try materialize(node.inputs[i]) }
            var c = try constant(node, i, what: i == 1 ? "starts" : "ends")
            let limit = Double(1 << 24)   // beyond any axis: the engine reads plan-time values as float32
            c.values = c.values.map { min(max($0, -limit), limit) }
            return addWeight("\(node.inputs[i]).bound", c)
        }
        var attrs = Attributes(axes: normalized.map { Layout.irAxis($0, rank: r) }, starts: [Int](repeating: 0, count: count), steps: stepList)
        attrs.ends = [Int](repeating: 0, count: count)
        emit(node.name, .slice, [x.name] + bounds, output, attrs)
        var out = x.shape
        for a in normalized { out[a] = -1 }
        if normalized.contains(0) { batchFree = false }
        shapes[output] = out
    }

    mutating func emitRunTimeSlice(_ name: String, _ x: (name: String, shape: [Int]),
                                   _ bounds: [(axis: Int, start: Int, end: Int, step: Int)], output: String) {
        let r = x.shape.count
        var attrs = Attributes(axes: bounds.map { Layout.irAxis($0.axis, rank: r) }, starts: bounds.map(\.start), steps: bounds.map(\.step))
        attrs.ends = bounds.map(\.end)
        emit(name, .slice, [x.name], output, attrs)
        var out = x.shape
        for b in bounds where out[b.axis] >= 0 {
            out[b.axis] = Self.sliceIndices(n: out[b.axis], start: b.start, end: b.end, step: b.step).count
        }
        for b in bounds where x.shape[b.axis] < 0 { out[b.axis] = -1 }
        if bounds.contains(where: { $0.axis == 0 }) { batchFree = false }
        shapes[output] = out
    }
}
