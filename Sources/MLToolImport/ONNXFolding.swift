import Foundation
import MLToolCore

/// Constant folding at import time: Constant nodes, and the shape arithmetic PyTorch exports emit
/// (Shape → Gather → Unsqueeze → Concat → Reshape, with Cast/Slice/arithmetic in between).
extension ONNXGraphBuilder {
    /// Folds `node` when its result is known at import time; returns false when it must run in the graph.
    mutating func fold(_ node: ONNXFile.Node) throws -> Bool {
        if hasRunTimeShape(node) { return false }
        let inputs = node.inputs.filter { !$0.isEmpty }
        let allConstant = inputs.allSatisfy { constants[$0] != nil }
        let result: ONNXConstant?
        switch node.opType {
        case "Constant": result = try constantNode(node)
        case "Shape":
            let s = try shape(of: node.inputs.first ?? "", in: node)
            let r = s.count
            let start = try normalizeClamped(int(node, "start", 0), rank: r)
            let end = try normalizeClamped(int(node, "end", r), rank: r)
            let dims = start < end ? Array(s[start..<end]) : []
            result = ONNXConstant(shape: [dims.count], values: dims.map { $0 < 0 ? .nan : Double($0) }, isInteger: true)
        case "Size":
            // The element count, NaN when a dimension is known only at run time (as Shape gives it).
            let s = try shape(of: node.inputs.first ?? "", in: node)
            let n = try knownCount(s, node)
            result = ONNXConstant(shape: [], values: [s.contains { $0 < 0 } ? .nan : Double(n)], isInteger: true)
        default:
            guard allConstant, !inputs.isEmpty else { return false }
            result = try foldConstant(node)
        }
        guard let result else { return false }
        if let out = node.outputs.first { constants[out] = recordRunTime(node, result) }
        return true
    }

    private func normalizeClamped(_ v: Int, rank: Int) throws -> Int { min(max(v < 0 ? v + rank : v, 0), rank) }

    private func constantNode(_ node: ONNXFile.Node) throws -> ONNXConstant {
        let a = node.attributes
        if let t = a["value"]?.t { return t }
        if let f = a["value_float"]?.f { return ONNXConstant(shape: [], values: [Double(f)]) }
        if let fs = a["value_floats"] { return ONNXConstant(shape: [fs.floats.count], values: fs.floats.map { Double($0) }) }
        if let i = a["value_int"]?.i { return ONNXConstant(shape: [], values: [Double(i)], isInteger: true) }
        if let isx = a["value_ints"] {
            return ONNXConstant(shape: [isx.ints.count], values: isx.ints.map { Double($0) }, isInteger: true)
        }
        throw ImportError.invalid(file: file, place: place(node), expected: "a value, value_float(s) or value_int(s) attribute",
                                  actual: a.keys.sorted().joined(separator: ", "))
    }

    private func foldConstant(_ node: ONNXFile.Node) throws -> ONNXConstant? {
        let c = operand(node)
        switch node.opType {
        case "Identity", "Dropout": return try c(0)
        case "DequantizeLinear": return try dequantize(node)
        case "QuantizeLinear": return try quantize(node)
        case "Cast": return try foldCast(node)
        case "Add", "Sub", "Mul", "Div", "Pow", "Min", "Max": return try foldArithmetic(node)
        case "Equal", "Less", "Greater": return try foldComparison(node)
        case "Where":
            var r = try elementwise([c(0), c(1), c(2)], node) { $0[0].isNaN ? .nan : $0[0] != 0 ? $0[1] : $0[2] }
            r.isInteger = try c(1).isInteger && c(2).isInteger
            return r
        case "Not", "Neg", "Floor", "Ceil", "Sqrt": return try foldUnary(node)
        case "Range": return try foldRange(node)
        case "ConstantOfShape": return try foldConstantOfShape(node)
        case "Expand": return try foldExpand(node)
        case "Unsqueeze", "Squeeze", "Reshape", "Flatten": return try foldReshape(node)
        case "Transpose":
            let x = try c(0)
            let perm = ints(node, "perm") ?? Array((0..<x.rank).reversed())
            guard perm.count == x.rank, Set(perm) == Set(0..<x.rank) else { return nil }
            return x.transposed(perm)
        case "Concat": return try foldConcat(node)
        case "Gather": return try foldGather(node)
        case "Slice":
            var x = try c(0)
            for t in try sliceTakes(node, shape: x.shape) { x = x.taken(t.indices, axis: t.axis) }
            return x
        default:
            return nil
        }
    }

    /// Cast: integer types truncate toward zero (NaN, an unknown value, stays NaN).
    private func foldCast(_ node: ONNXFile.Node) throws -> ONNXConstant? {
        let c = operand(node)
        let x = try c(0)
        let to = int(node, "to", 1)
        let integer = ![1, 10, 11, 16].contains(to)
        return ONNXConstant(shape: x.shape, values: integer ? x.values.map { $0.isNaN ? $0 : $0.rounded(.towardZero) } : x.values,
                            isInteger: integer)
    }

    /// Add, Sub, Mul, Div, Pow on two inputs, Min and Max on any number; integer division and powers truncate.
    private func foldArithmetic(_ node: ONNXFile.Node) throws -> ONNXConstant? {
        let c = operand(node)
        let parts = try node.inputs.indices.filter { !node.inputs[$0].isEmpty }.map(c)
        guard let first = parts.first else { return nil }
        let integer = parts.allSatisfy(\.isInteger)
        let f: (Double, Double) -> Double
        switch node.opType {
        case "Add": f = (+)
        case "Sub": f = (-)
        case "Mul": f = (*)
        case "Pow":
            f = { x, y in
                if x.isNaN || y.isNaN { return .nan }   // pow(NaN, 0) is 1: here NaN is an unknown value
                return integer ? Foundation.pow(x, y).rounded(.towardZero) : Double(Foundation.pow(Float(x), Float(y)))
            }
        case "Min": f = { x, y in x.isNaN || y.isNaN ? .nan : Swift.min(x, y) }
        case "Max": f = { x, y in x.isNaN || y.isNaN ? .nan : Swift.max(x, y) }
        default: f = { x, y in integer ? (x / y).rounded(.towardZero) : x / y }
        }
        guard parts.count == 2 || ["Min", "Max"].contains(node.opType) else { return nil }
        var acc = first
        for p in parts.dropFirst() { acc = try elementwise([acc, p], node) { f($0[0], $0[1]) } }
        acc.isInteger = integer
        return acc
    }

    private func foldComparison(_ node: ONNXFile.Node) throws -> ONNXConstant? {
        let c = operand(node)
        let a = try c(0), b = try c(1)
        let f: (Double, Double) -> Bool = node.opType == "Equal" ? { $0 == $1 } : node.opType == "Less" ? { $0 < $1 } : { $0 > $1 }
        // NaN is a value known only at run time (`runTime`): so is the answer.
        var r = try elementwise([a, b], node) { $0[0].isNaN || $0[1].isNaN ? .nan : f($0[0], $0[1]) ? 1 : 0 }
        r.isInteger = true
        return r
    }

    private func foldUnary(_ node: ONNXFile.Node) throws -> ONNXConstant? {
        let c = operand(node)
        let x = try c(0)
        let f: (Double) -> Double
        switch node.opType {
        case "Not": f = { $0.isNaN ? .nan : $0 == 0 ? 1 : 0 }
        case "Neg": f = { -$0 }
        case "Floor": f = { $0.rounded(.down) }
        case "Ceil": f = { $0.rounded(.up) }
        default: f = { Double(Float($0).squareRoot()) }
        }
        return ONNXConstant(shape: x.shape, values: x.values.map(f), isInteger: x.isInteger)
    }

    private func foldRange(_ node: ONNXFile.Node) throws -> ONNXConstant? {
        let c = operand(node)
        let start = try c(0), limit = try c(1), delta = try c(2)
        guard let s0 = start.scalar, let l = limit.scalar, let d = delta.scalar, d != 0, s0.isFinite, l.isFinite, d.isFinite else {
            throw ImportError.invalid(file: file, place: place(node), expected: "known scalar start, limit and non-zero delta",
                                      actual: "\(start.values), \(limit.values), \(delta.values)")
        }
        let count = Swift.max(((l - s0) / d).rounded(.up), 0)
        guard count <= Double(1 << 24) else {
            throw ImportError.invalid(file: file, place: place(node), expected: "a range of at most 2^24 values", actual: "\(count)")
        }
        let integer = start.isInteger && limit.isInteger && delta.isInteger
        let values = (0..<Int(count)).map { i -> Double in
            integer ? s0 + Double(i) * d : Double(Float(s0) + Float(i) * Float(d))
        }
        return ONNXConstant(shape: [values.count], values: values, isInteger: integer)
    }

    private func foldConstantOfShape(_ node: ONNXFile.Node) throws -> ONNXConstant? {
        let c = operand(node)
        let dims = try c(0).ints
        let shape = try dims.map { d -> Int in
            guard let d, d >= 0 else {
                throw ImportError.invalid(file: file, place: place(node), expected: "a known shape", actual: "\(dims)")
            }
            return d
        }
        let n = try knownCount(shape, node)
        guard n <= 1 << 24 else {
            throw ImportError.invalid(file: file, place: place(node), expected: "a constant of at most 2^24 elements", actual: "\(shape)")
        }
        let value = node.attributes["value"]?.t
        let v = value?.values.first ?? 0
        return ONNXConstant(shape: shape, values: [Double](repeating: v, count: n), isInteger: value?.isInteger ?? false)
    }

    private func foldExpand(_ node: ONNXFile.Node) throws -> ONNXConstant? {
        let c = operand(node)
        let x = try c(0)
        let target = try c(1).ints.map { $0 ?? -1 }
        let out = try broadcast(x.shape, target, node)
        let zeros = ONNXConstant(shape: out.map { Swift.max($0, 1) }, values: [], isInteger: true)
        guard !out.contains(where: { $0 < 0 }) else {
            throw ImportError.invalid(file: file, place: "\(place(node)) shape", expected: "known dimensions", actual: "\(target)")
        }
        var r = try elementwise([x, zeros], node, shapesOnly: true) { $0[0] }
        r.isInteger = x.isInteger
        return r
    }

    private func foldReshape(_ node: ONNXFile.Node) throws -> ONNXConstant? {
        let c = operand(node)
        let x = try c(0)
        let out = try reshapedShape(node, input: x.shape)
        guard !out.contains(where: { $0 < 0 }), Self.product(out[...]) == x.values.count else {
            throw ImportError.invalid(file: file, place: place(node), expected: "a shape of \(x.values.count) elements", actual: "\(out)")
        }
        return ONNXConstant(shape: out, values: x.values, isInteger: x.isInteger)
    }

    private func foldConcat(_ node: ONNXFile.Node) throws -> ONNXConstant? {
        let c = operand(node)
        let parts = try node.inputs.indices.filter { !node.inputs[$0].isEmpty }.map(c)
        guard let first = parts.first else { return nil }
        let axis = try normalize(int(node, "axis", 0), rank: first.rank, node)
        let outer = first.shape[..<axis].reduce(1, *)
        var values: [Double] = [], total = 0
        for p in parts {
            guard p.rank == first.rank, p.shape.indices.allSatisfy({ $0 == axis || p.shape[$0] == first.shape[$0] }) else {
                throw ImportError.invalid(file: file, place: place(node), expected: "inputs like \(first.shape) except on axis \(axis)",
                                          actual: "\(p.shape)")
            }
            total += p.shape[axis]
        }
        for o in 0..<outer {
            for p in parts {
                let inner = p.shape[axis...].reduce(1, *)
                values += p.values[(o * inner)..<((o + 1) * inner)]
            }
        }
        var shape = first.shape
        shape[axis] = total
        return ONNXConstant(shape: shape, values: values, isInteger: first.isInteger)
    }

    private func foldGather(_ node: ONNXFile.Node) throws -> ONNXConstant? {
        let c = operand(node)
        let data = try c(0), idx = try c(1)
        let axis = try normalize(int(node, "axis", 0), rank: data.rank, node)
        let n = data.shape[axis]
        let outer = data.shape[..<axis].reduce(1, *), inner = data.shape[(axis + 1)...].reduce(1, *)
        var values: [Double] = []
        for o in 0..<outer {
            for i in idx.ints {
                guard let i, i >= -n, i < n else {
                    throw ImportError.invalid(file: file, place: "\(place(node)) indices", expected: "-\(n)..<\(n)", actual: "\(idx.values)")
                }
                let k = i < 0 ? i + n : i
                values += data.values[((o * n + k) * inner)..<((o * n + k + 1) * inner)]
            }
        }
        return ONNXConstant(shape: Array(data.shape[..<axis]) + idx.shape + Array(data.shape[(axis + 1)...]),
                            values: values, isInteger: data.isInteger)
    }

    /// Input i of `node` as a constant (`constant(_:_:what:)`).
    private func operand(_ node: ONNXFile.Node) -> (Int) throws -> ONNXConstant {
        { i in try self.constant(node, i, what: "input \(i)") }
    }

    /// f applied elementwise to `parts` under numpy broadcasting. With `shapesOnly` the last part's values are
    /// not read (only its shape takes part in the broadcast: Expand).
    private func elementwise(_ parts: [ONNXConstant], _ node: ONNXFile.Node, shapesOnly: Bool = false,
                             _ f: ([Double]) -> Double) throws -> ONNXConstant {
        var out: [Int] = []
        for p in parts { out = try broadcast(out, p.shape, node) }
        let r = out.count
        func strides(_ s: [Int]) -> [Int] {
            let p = [Int](repeating: 1, count: r - s.count) + s
            var st = [Int](repeating: 0, count: r), acc = 1
            for i in stride(from: r - 1, through: 0, by: -1) { st[i] = p[i] == 1 ? 0 : acc; acc *= p[i] }
            return st
        }
        let n = Self.product(out[...])
        guard n <= 1 << 24 else {
            throw ImportError.invalid(file: file, place: place(node), expected: "a constant of at most 2^24 elements", actual: "\(out)")
        }
        let read = shapesOnly ? Array(parts.dropLast()) : parts
        let st = read.map { strides($0.shape) }
        var values = [Double](repeating: 0, count: n)
        var index = [Int](repeating: 0, count: r)
        var args = [Double](repeating: 0, count: read.count)
        for o in 0..<n {
            for (k, p) in read.enumerated() {
                var i = 0
                for d in 0..<r { i += index[d] * st[k][d] }
                args[k] = p.values[i]
            }
            values[o] = f(args)
            var k = r - 1
            while k >= 0 { index[k] += 1; if index[k] < out[k] { break }; index[k] = 0; k -= 1 }
        }
        return ONNXConstant(shape: out, values: values, isInteger: false)
    }

    /// The ONNX output shape of Reshape / Flatten / Squeeze / Unsqueeze applied to `input` (-1 = unknown).
    func reshapedShape(_ node: ONNXFile.Node, input: [Int]) throws -> [Int] {
        let r = input.count
        switch node.opType {
        case "Flatten":
            let raw = int(node, "axis", 1)
            let axis = raw < 0 ? raw + r : raw              // Flatten takes -r…r
            guard axis >= 0, axis <= r else {
                throw ImportError.invalid(file: file, place: "\(place(node)) axis", expected: "-\(r)…\(r)", actual: "\(raw)")
            }
            return [Self.product(input[..<axis]), Self.product(input[axis...])]
        case "Squeeze":
            let axesList = opset >= 13 ? try optionalConstant(node, 1, what: "axes")?.ints.compactMap { $0 } : ints(node, "axes")
            // Without axes: the axes of size 1 (a free dimension is assumed 1 or not by the variant converting it:
            // `assumeSqueezedSizes`).
            let axes = try Set((axesList ?? input.indices.filter { input[$0] == 1 }).map { try normalize($0, rank: r, node) })
            for a in axes where input[a] != 1 && input[a] >= 0 {
                throw ImportError.invalid(file: file, place: "\(place(node)) axes", expected: "axes of size 1",
                                          actual: "axis \(a) of \(input)")
            }
            return input.indices.filter { !axes.contains($0) }.map { input[$0] }
        case "Unsqueeze":
            let axesList = opset >= 13 ? try constant(node, 1, what: "axes").ints.compactMap { $0 } : (ints(node, "axes") ?? [])
            let outRank = r + axesList.count
            let axes = try Set(axesList.map { try normalize($0, rank: outRank, node) })
            guard axes.count == axesList.count else {
                throw ImportError.invalid(file: file, place: "\(place(node)) axes", expected: "distinct axes", actual: "\(axesList)")
            }
            var out: [Int] = [], k = 0
            for i in 0..<outRank {
                if axes.contains(i) { out.append(1) } else { out.append(input[k]); k += 1 }
            }
            return out
        default: // Reshape
            let spec = try constant(node, 1, what: "shape")
            let allowZero = int(node, "allowzero", 0) == 1
            var out: [Int] = []
            var inferAt: Int?
            for (i, v) in spec.ints.enumerated() {
                guard let v else { out.append(-1); continue }      // a run-time dimension from Shape
                if v == 0 && !allowZero {
                    guard i < r else {
                        throw ImportError.invalid(file: file, place: "\(place(node)) shape", expected: "0 only where the input has a dimension", actual: "\(spec.values)")
                    }
                    out.append(input[i])
                } else if v == -1 {
                    guard inferAt == nil else {
                        throw ImportError.invalid(file: file, place: "\(place(node)) shape", expected: "at most one -1", actual: "\(spec.values)")
                    }
                    inferAt = i; out.append(-1)
                } else if v < 0 {
                    throw ImportError.invalid(file: file, place: "\(place(node)) shape", expected: "dimensions ≥ -1", actual: "\(spec.values)")
                } else {
                    out.append(v)
                }
            }
            if let k = inferAt {
                // Known input elements over known output elements; unknown dims on both sides are taken to be the
                // same run-time dimension (the batch).
                let inUnknown = input.filter { $0 < 0 }.count
                let outUnknown = out.enumerated().filter { $0.element < 0 && $0.offset != k }.count
                let inKnown = try knownCount(input, node)
                let outKnown = try knownCount(out, node)
                if inUnknown == outUnknown, outKnown > 0, inKnown % outKnown == 0 {
                    out[k] = inKnown / outKnown
                } else if inUnknown != outUnknown + 1 && !spec.values.contains(where: \.isNaN) {
                    throw ImportError.invalid(file: file, place: "\(place(node)) shape", expected: "a shape that fits the input \(input)",
                                              actual: "\(spec.values)")
                }
            } else if !input.contains(where: { $0 < 0 }) && !out.contains(where: { $0 < 0 }),
                      try knownCount(out, node) != knownCount(input, node) {
                throw ImportError.invalid(file: file, place: "\(place(node)) shape", expected: "\(Self.product(input[...])) elements",
                                          actual: "\(out) (\(Self.product(out[...])))")
            }
            return out
        }
    }
}
