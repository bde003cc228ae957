import MLToolCore

/// MIL ops that work along axes (the `reduce_*` family, stack, slicing, gathering, split, tile), element-wise ops
/// beyond the activations (pow, erf, comparisons, select), and einsum — each expressed as ONNX-semantics nodes.
extension CoreMLProgramOps {
    static let tensorConverters: [String: Converter] = [
        "reduce_sum": { try $0.reduceAlong("ReduceSum", $1, $2) },
        "reduce_mean": { try $0.reduceAlong("ReduceMean", $1, $2) },
        "reduce_max": { try $0.reduceAlong("ReduceMax", $1, $2) },
        "reduce_min": { try $0.reduceAlong("ReduceMin", $1, $2) },
        "reduce_prod": { try $0.reduceAlong("ReduceProd", $1, $2) },
        "reduce_sum_square": { try $0.reduceAlong("ReduceSumSquare", $1, $2) },
        "reduce_log_sum": { try $0.reduceAlong("ReduceLogSum", $1, $2) },
        "reduce_log_sum_exp": { try $0.reduceAlong("ReduceLogSumExp", $1, $2) },
        "reduce_l1_norm": { try $0.reduceAlong("ReduceL1", $1, $2) },
        "reduce_l2_norm": { try $0.reduceAlong("ReduceL2", $1, $2) },
        "reduce_argmax": { try $0.argReduce("ArgMax", $1, $2) },
        "reduce_argmin": { try $0.argReduce("ArgMin", $1, $2) },
        "stack": { r, op, out in try r.g.stack(r.variables(op, "values"), axis: try r.int(op, "axis", 0), out[0]) },
        "slice_by_index": { try $0.sliceByIndex($1, $2) },
        "slice_by_size": { try $0.sliceBySize($1, $2) },
        "gather": { r, op, out in
            guard try r.int(op, "batch_dims", 0) == 0 else { throw r.g.refused("gather with batch_dims is not supported") }
            try r.g.op("Gather", [r.required(op, "x"), r.required(op, "indices")], out[0], ["axis": CoreMLGraph.int(try r.int(op, "axis", 0))])
        },
        "gather_along_axis": { r, op, out in
            try r.g.op("GatherElements", [r.required(op, "x"), r.required(op, "indices")], out[0],
                       ["axis": CoreMLGraph.int(try r.int(op, "axis", 0))])
        },
        "gather_nd": { r, op, out in
            try r.g.op("GatherND", [r.required(op, "x"), r.required(op, "indices")], out[0],
                       ["batch_dims": CoreMLGraph.int(try r.int(op, "batch_dims", 0))])
        },
        "tile": { r, op, out in try r.g.op("Tile", [r.required(op, "x"), r.g.ints(out[0] + ".reps", try r.ints(op, "reps", []))], out[0]) },
        "split": { try $0.split($1, $2) },
        "einsum": { r, op, out in
            try r.g.op("Einsum", r.variables(op, "values"), out[0], ["equation": CoreMLGraph.string(try r.string(op, "equation", ""))])
        },
        "pow": { try $0.binary("Pow", $1, $2) },
        "maximum": { try $0.binary("Max", $1, $2) },
        "minimum": { try $0.binary("Min", $1, $2) },
        "equal": { try $0.binary("Equal", $1, $2) },
        "greater": { try $0.binary("Greater", $1, $2) },
        "greater_equal": { try $0.binary("GreaterOrEqual", $1, $2) },
        "less": { try $0.binary("Less", $1, $2) },
        "less_equal": { try $0.binary("LessOrEqual", $1, $2) },
        "logical_and": { try $0.binary("And", $1, $2) },
        "logical_or": { try $0.binary("Or", $1, $2) },
        "logical_xor": { try $0.binary("Xor", $1, $2) },
        "not_equal": { r, op, out in
            let same = r.g.fresh(out[0] + ".equal")
            try r.g.op("Equal", [r.required(op, "x"), r.required(op, "y")], same)
            try r.g.op("Not", [same], out[0])
        },
        "logical_not": { r, op, out in try r.g.op("Not", [r.required(op, "x")], out[0]) },
        "select": { r, op, out in try r.g.op("Where", [r.required(op, "cond"), r.required(op, "a"), r.required(op, "b")], out[0]) },
        "erf": { r, op, out in try r.g.op("Erf", [r.required(op, "x")], out[0]) },
        "floor": { r, op, out in try r.g.op("Floor", [r.required(op, "x")], out[0]) },
        "ceil": { r, op, out in try r.g.op("Ceil", [r.required(op, "x")], out[0]) },
        "sign": { r, op, out in try r.g.op("Sign", [r.required(op, "x")], out[0]) },
        "sin": { r, op, out in try r.g.op("Sin", [r.required(op, "x")], out[0]) },
        "cos": { r, op, out in try r.g.op("Cos", [r.required(op, "x")], out[0]) },
        "square": { r, op, out in
            let x = try r.required(op, "x")
            try r.g.op("Mul", [x, x], out[0])
        },
    ]
}

extension CoreMLProgramReader {
    /// An end past any dimension (ONNX Slice clamps it).
    static let past = Int(Int32.max)

    /// `reduce_*(x, axes, keep_dims)`: all axes when `axes` is absent.
    mutating func reduceAlong(_ onnx: String, _ op: CoreMLProgramOps.Op, _ out: [String]) throws {
        try g.reduce(onnx, required(op, "x"), axes: try constInput(op, "axes")?.ints, keepDims: try bool(op, "keep_dims", false), out[0])
    }

    mutating func argReduce(_ onnx: String, _ op: CoreMLProgramOps.Op, _ out: [String]) throws {
        try g.op(onnx, [required(op, "x")], out[0], ["axis": CoreMLGraph.int(try int(op, "axis", -1)),
                                                   "keepdims": CoreMLGraph.int(try bool(op, "keep_dims", false) ? 1 : 0)])
    }

    /// `slice_by_index(x, begin, end, stride, begin_mask, end_mask, squeeze_mask)`: `CoreMLGraph.slice`.
    mutating func sliceByIndex(_ op: CoreMLProgramOps.Op, _ out: [String]) throws {
        let r = try g.need(try required(op, "x")).count
        func flags(_ key: String) throws -> [Bool] {
            let v = try constInput(op, key)?.values.map { $0 != 0 } ?? []
            return v.isEmpty ? [Bool](repeating: false, count: r) : v
        }
        let slice = CoreMLSlice(begin: try ints(op, "begin", []), end: try ints(op, "end", []),
                                stride: try ints(op, "stride", [Int](repeating: 1, count: r)),
                                beginMask: try flags("begin_mask"), endMask: try flags("end_mask"), squeeze: try flags("squeeze_mask"))
        try g.slice(try required(op, "x"), slice, out[0])
    }

    /// `slice_by_size(x, begin, size)`: a size of −1 runs to the end.
    mutating func sliceBySize(_ op: CoreMLProgramOps.Op, _ out: [String]) throws {
        let x = try required(op, "x"), r = try g.need(x).count
        let begin = try ints(op, "begin", []), size = try ints(op, "size", [])
        guard begin.count == r, size.count == r, size.allSatisfy({ $0 >= -1 }) else {
            throw g.invalid("", expected: "begin and size of \(r) values (size ≥ −1)", actual: "\(begin), \(size)")
        }
        let ends = zip(begin, size).map { b, n in n == -1 || (b < 0 && b + n == 0) ? Self.past : b + n }
        try g.op("Slice", [x, g.ints(out[0] + ".starts", begin), g.ints(out[0] + ".ends", ends), g.ints(out[0] + ".axes", Array(0..<r))], out[0])
    }

    /// `split(x, num_splits | split_sizes, axis)`: `CoreMLGraph.split`.
    mutating func split(_ op: CoreMLProgramOps.Op, _ out: [String]) throws {
        let n = try int(op, "num_splits", out.count)
        guard n == out.count else { throw g.invalid("num_splits", expected: "\(out.count) (one per output)", actual: "\(n)") }
        try g.split(try required(op, "x"), axis: try int(op, "axis", 0), sizes: try ints(op, "split_sizes", []), out)
    }
}
