import MLToolCore

extension ONNXGraphBuilder {
    /// Ops whose 1-D form (input (N, C, L)) runs as the 2-D form on (N, C, L, 1).
    static let liftable: Set<String> = ["Conv", "ConvTranspose", "MaxPool", "AveragePool", "BatchNormalization", "GlobalAveragePool",
                                        "GlobalMaxPool"]

    /// Converts a 1-D `node` with `convert` on a 2-D copy of it: the input gets a trailing axis of 1, kernels,
    /// strides, dilations and pads get a second spatial axis of size 1 / step 1 / no padding, conv weights
    /// (OC, C/groups, K) become (OC, C/groups, K, 1) (ConvTranspose's (C, OC/groups, K) alike; its output_padding
    /// gets a 0 and its output_shape a 1), and the result is reshaped back to rank 3.
    mutating func lifted(_ node: ONNXFile.Node, _ convert: ONNXOps.Converter) throws {
        let x = try activation(node)
        guard let out = node.outputs.first, !out.isEmpty else {
            throw ImportError.invalid(file: file, place: place(node), expected: "an output", actual: "none")
        }
        var n = node
        let x4 = fresh("\(x.name).2d")
        try emitLift("\(node.name).to2d", input: x.name, from: x.shape, output: x4)
        n.inputs[0] = x4
        if node.opType == "Conv" || node.opType == "ConvTranspose" {
            let w = try constant(node, 1, what: "weights")
            guard w.rank == 3 else {
                let layout = node.opType == "Conv" ? "(OC, C/groups, K)" : "(C, OC/groups, K)"
                throw ImportError.invalid(file: file, place: "\(place(node)) weights", expected: "rank 3 \(layout)", actual: "\(w.shape)")
            }
            let w4 = fresh("\(node.inputs[1]).2d")
            var w2 = w
            w2.shape = w.shape + [1]        // a trailing axis: int8 parameters (axis 0) still apply
            constants[w4] = w2
            n.inputs[1] = w4
        }
        for key in ["kernel_shape", "strides", "dilations"] {
            if var a = n.attributes[key], a.ints.count == 1 { a.ints.append(1); n.attributes[key] = a }
        }
        if var a = n.attributes["output_padding"], a.ints.count == 1 { a.ints.append(0); n.attributes["output_padding"] = a }
        if var a = n.attributes["output_shape"], a.ints.count == 1 || a.ints.count == 3 {
            a.ints.append(1)
            n.attributes["output_shape"] = a
        }
        if var a = n.attributes["pads"], a.ints.count == 2 {
            a.ints = [a.ints[0], 0, a.ints[1], 0]
            n.attributes["pads"] = a
        }
        let out4 = fresh("\(out).2d")
        n.outputs = [out4]
        try convert(&self, n)
        guard let s4 = shapes[out4] else { return }
        try emitLift("\(node.name).to1d", input: out4, from: s4, output: out)
    }

    /// (N, C, L) → (N, C, L, 1) (`from` of rank 3), or back (rank 4): a reshape, or with more than one size known
    /// only at run time (which a reshape cannot infer) a transpose and an unsqueeze (a squeeze and a transpose).
    private mutating func emitLift(_ name: String, input: String, from: [Int], output: String) throws {
        let to = from.count == 3 ? from + [1] : Array(from.dropLast())
        guard from.filter({ $0 < 0 }).count > 1 else {
            return try emitReshape(name, input: input, from: from, to: to, output: output)
        }
        let mid = fresh("\(output).nlc")
        if from.count == 3 {   // IR (N, L, 1, C)
            emit("\(name).nlc", .transpose, [input], mid, Attributes(perm: [0, 2, 1]))
            emit(name, .unsqueeze, [mid], output, Attributes(axes: [2]))
        } else {
            emit(name, .squeeze, [input], mid, Attributes(axes: [2]))
            emit("\(name).ncl", .transpose, [mid], output, Attributes(perm: [0, 2, 1]))
        }
        shapes[output] = to
    }
}
