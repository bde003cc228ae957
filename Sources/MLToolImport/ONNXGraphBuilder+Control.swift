import MLToolCore

/// ONNX control flow, inlined into the graph: If, and Loop / Scan unrolled when their trip count is known at import.
///
/// A branch's nodes are converted by this same builder under new names: every tensor the branch makes (its
/// initializers and node outputs) gets a fresh name, recorded in `scope` while the branch converts, so that a nested
/// If's branches resolve it too; any other name is a tensor of an enclosing graph, read as it is. An If whose
/// condition folds at import inlines only the taken branch (no IR op of its own); otherwise both branches are
/// inlined and each output is an `ifElse` of the two values (same shape: `Program+Shapes.swift`). A Loop or Scan body
/// is inlined once per iteration, its inputs bound to the iteration's values; its scan outputs are stacked along their
/// axis (Unsqueeze and Concat, converted like the file's own).
extension ONNXGraphBuilder {
    /// The most iterations a Loop or Scan is unrolled to.
    static let maxUnrolledIterations = 4_096
    /// The most IR nodes and constants the graph may hold while a loop unrolls: nested loops multiply their counts.
    static let maxUnrolledValues = 1 << 20

    /// Refuses to unroll one more iteration of `node` once the graph holds `maxUnrolledValues`.
    private func checkUnrolledSize(_ node: ONNXFile.Node) throws {
        guard nodes.count + constants.count <= Self.maxUnrolledValues else {
            throw ImportError.invalid(file: file, place: place(node), expected: "at most \(Self.maxUnrolledValues) nodes and constants once unrolled (nested loops multiply)",
                                      actual: "\(nodes.count + constants.count)")
        }
    }

    /// The branch attributes of an If, in order: then, else.
    static let ifBranches = [("then_branch", "then"), ("else_branch", "else")]

    mutating func ifNode(_ node: ONNXFile.Node) throws {
        let branches = try Self.ifBranches.map { try graphAttribute(node, $0.0) }
        let counts = branches.map(\.outputs.count)
        guard counts.allSatisfy({ $0 == node.outputs.count }) else {
            throw ImportError.invalid(file: file, place: place(node), expected: "branches with \(node.outputs.count) output(s) each, as the node",
                                      actual: "then_branch \(counts[0]), else_branch \(counts[1])")
        }
        let cond = node.inputs.first ?? ""
        if let c = constants[cond] {
            guard c.values.count == 1 else {
                throw ImportError.invalid(file: file, place: "\(place(node)) condition", expected: "one element", actual: "shape \(c.shape)")
            }
            guard !c.values[0].isNaN, !isPartial(cond) else {
                // Equal(NaN, 1) folded to 0 says nothing: only the engine, planning an input shape, could decide it.
                throw ImportError.invalid(file: file, place: "\(place(node)) condition",
                                          expected: "a value known at import or computed by the graph",
                                          actual: "'\(cond)', from a dimension known only at run time")
            }
            let taken = c.values[0] != 0 ? 0 : 1
            let values = try inline(branches[taken], of: node, tag: Self.ifBranches[taken].1, into: node.outputs)
            for (out, v) in zip(node.outputs, values) where !out.isEmpty && out != v { try alias(out, to: v, node) }
            return
        }
        let condShape = try activation(node, 0).shape
        guard condShape.allSatisfy({ $0 == 1 }) else {
            throw ImportError.invalid(file: file, place: "\(place(node)) condition", expected: "one element", actual: "shape \(condShape)")
        }
        let before = (nodes: nodes.count, weights: weightOrder.count)
        let values = try branches.indices.map { i in
            branchPath.append((cond, i == 0))
            defer { branchPath.removeLast() }
            return try inline(branches[i], of: node, tag: Self.ifBranches[i].1)
        }
        if try ranksDiffer(values, node) {
            let taken = try assumeBranch(node, condition: cond, values: values, before: before)
            for (out, v) in zip(node.outputs, taken) where !out.isEmpty && out != v { try alias(out, to: v, node) }
            return
        }
        for (i, out) in node.outputs.enumerated() where !out.isEmpty {
            let pair = [values[0][i], values[1][i]]
            let (a, b) = (try shape(of: pair[0], in: node), try shape(of: pair[1], in: node))
            let operands = pair.map { name -> String in
                guard shapes[name] == nil, let c = constants[name] else { return name }
                return addWeight(name, c.rank == 4 ? c.transposed(Layout.toNHWC) : c)
            }
            emit(node.outputs.count == 1 ? node.name : "\(node.name).\(i)", .ifElse, [cond] + operands, out)
            shapes[out] = zip(a, b).map { $0 == $1 ? $0 : -1 }
        }
    }

    /// Converts the nodes of subgraph `g` under fresh names (see the type's comment) and returns the graph names of
    /// its outputs. With `targets`, the node that makes output i writes `targets[i]` itself where it can.
    mutating func inline(_ g: ONNXFile.Subgraph, of node: ONNXFile.Node, tag: String, into targets: [String] = [],
                         binding: [String] = []) throws -> [String] {
        let outer = scope
        defer { scope = outer }
        let at = "\(place(node)) \(tag)"
        for (input, value) in zip(g.inputs.map(\.name), binding) { scope[input] = value }
        for (name, c) in g.initializers.sorted(by: { $0.key < $1.key }) {
            let n = fresh(name)
            constants[n] = c
            scope[name] = n
        }
        let made = Set(g.nodes.flatMap(\.outputs))
        var direct: [String: String] = [:]
        for (o, t) in zip(g.outputs.map(\.name), targets) where made.contains(o) && direct[o] == nil && !t.isEmpty { direct[o] = t }
        for n in g.nodes {
            var m = n
            m.name = "\(node.name)/\(tag)/\(n.name)"
            m.inputs = try n.inputs.map { name in
                guard !name.isEmpty else { return name }
                return try resolve(name, place: "\(at) node '\(n.name)' (\(n.opType))")
            }
            m.outputs = n.outputs.map { o in
                guard !o.isEmpty else { return o }
                let r = direct.removeValue(forKey: o) ?? fresh(o)
                scope[o] = r
                return r
            }
            try convert(m)
        }
        return try g.outputs.map { try resolve($0.name, place: "\(at) output") }
    }

    // MARK: Loop and Scan

    mutating func loop(_ node: ONNXFile.Node) throws {
        let body = try graphAttribute(node, "body")
        // Inputs: M, cond, then N carried values; the body takes (i, cond, N values) and gives (cond, N values, K scan
        // outputs); the node gives the N final values and the K stacked scan outputs.
        let n = max(node.inputs.count - 2, 0), k = body.outputs.count - 1 - n
        guard body.inputs.count == n + 2, k >= 0, node.outputs.count == n + k else {
            throw ImportError.invalid(file: file, place: "\(place(node)) body", expected: "\(n + 2) inputs and \(n + 1)+ outputs (\(n) carried values), as many outputs as the node's plus 1",
                                      actual: "\(body.inputs.count) inputs, \(body.outputs.count) outputs (node: \(node.outputs.count))")
        }
        let tripCount = try knownScalar(node, 0, what: "trip count M")
        let initial = try knownScalar(node, 1, what: "condition")
        guard tripCount != nil || initial != nil else {
            throw ImportError.invalid(file: file, place: place(node), expected: "a trip count M or a condition", actual: "neither (an endless loop)")
        }
        if let m = tripCount, m > Double(Self.maxUnrolledIterations) {
            throw ImportError.invalid(file: file, place: "\(place(node)) trip count M", expected: "at most \(Self.maxUnrolledIterations) iterations (unrolled at import)",
                                      actual: "\(Int(m))")
        }
        var values = try node.inputs.dropFirst(2).map { try resolve($0, place: "\(place(node)) input") }
        var pieces = [[String]](repeating: [], count: k)
        var going = initial.map { $0 != 0 } ?? true
        var i = 0
        while going, tripCount.map({ Double(i) < $0 }) ?? true {
            guard i < Self.maxUnrolledIterations else {
                throw ImportError.invalid(file: file, place: "\(place(node)) condition", expected: "false within \(Self.maxUnrolledIterations) iterations (unrolled at import)",
                                          actual: "still true")
            }
            try checkUnrolledSize(node)
            let iteration = addConstant("\(node.name).i", ONNXConstant(shape: [], values: [Double(i)], isInteger: true))
            let condition = addConstant("\(node.name).cond", ONNXConstant(shape: [], values: [1], isInteger: true))
            let outs = try inline(body, of: node, tag: "\(i)", binding: [iteration, condition] + values)
            if initial != nil {
                // With no condition input the body's condition is ignored (a for loop).
                guard let c = constants[outs[0]], c.values.count == 1, !c.values[0].isNaN, !isPartial(outs[0]) else {
                    throw ImportError.invalid(file: file, place: "\(place(node)) body condition", expected: "a value known at import (the loop is unrolled)",
                                              actual: "'\(body.outputs[0].name)', computed at run time")
                }
                going = c.values[0] != 0
            }
            values = Array(outs[1..<(1 + n)])
            for j in 0..<k { pieces[j].append(outs[1 + n + j]) }
            i += 1
        }
        for (out, v) in zip(node.outputs, values) where !out.isEmpty { try alias(out, to: v, node) }
        for (j, out) in node.outputs.dropFirst(n).enumerated() where !out.isEmpty { try stack(pieces[j], axis: 0, into: out, node) }
    }

    mutating func scan(_ node: ONNXFile.Node) throws {
        guard opset >= 9 else {
            throw ImportError.invalid(file: file, place: place(node), expected: "opset 9 or later (Scan without a batch axis)", actual: "opset \(opset)")
        }
        let body = try graphAttribute(node, "body")
        // Inputs: N initial states, then M scanned tensors; the body takes (N states, M slices) and gives (N states, K
        // scan outputs), as the node does.
        let m = int(node, "num_scan_inputs", 0), n = node.inputs.count - m, k = body.outputs.count - n
        guard m >= 1, n >= 0, k >= 0, body.inputs.count == n + m, node.outputs.count == n + k else {
            throw ImportError.invalid(file: file, place: "\(place(node)) body", expected: "\(max(n, 0) + m) inputs and \(node.outputs.count) outputs (num_scan_inputs \(m))",
                                      actual: "\(body.inputs.count) inputs, \(body.outputs.count) outputs")
        }
        func list(_ key: String, _ count: Int) throws -> [Int] {
            let v = ints(node, key) ?? [Int](repeating: 0, count: count)
            guard v.count == count else {
                throw ImportError.invalid(file: file, place: "\(place(node)) \(key)", expected: "\(count) values", actual: "\(v)")
            }
            return v
        }
        let inAxes = try list("scan_input_axes", m), inReversed = try list("scan_input_directions", m).map { $0 == 1 }
        let outAxes = try list("scan_output_axes", k), outReversed = try list("scan_output_directions", k).map { $0 == 1 }
        let scanned = try node.inputs.suffix(m).map { try resolve($0, place: "\(place(node)) input") }
        var length: Int?
        var axes: [Int] = []
        for (j, x) in scanned.enumerated() {
            let s = try shape(of: x, in: node)
            let axis = try normalize(inAxes[j], rank: s.count, node)
            axes.append(axis)
            guard s[axis] >= 0, length == nil || length == s[axis] else {
                throw ImportError.invalid(file: file, place: "\(place(node)) scan input \(j) '\(x)'", expected: "a sequence length known at import (the loop is unrolled)\(length.map { ", \($0)" } ?? "")",
                                          actual: "shape \(s), axis \(axis)")
            }
            length = s[axis]
        }
        let steps = length ?? 0
        guard steps >= 1, steps <= Self.maxUnrolledIterations else {
            throw ImportError.invalid(file: file, place: "\(place(node)) sequence length", expected: "1…\(Self.maxUnrolledIterations) (unrolled at import)",
                                      actual: "\(steps)")
        }
        var states = try node.inputs.prefix(n).map { try resolve($0, place: "\(place(node)) input") }
        var pieces = [[String]](repeating: [], count: k)
        for t in 0..<steps {
            try checkUnrolledSize(node)
            var slices: [String] = []
            for (j, x) in scanned.enumerated() {
                let index = addConstant("\(node.name).t", ONNXConstant(shape: [], values: [Double(inReversed[j] ? steps - 1 - t : t)], isInteger: true))
                let slice = fresh("\(x).\(t)")
                try convert(ONNXFile.Node(name: "\(node.name).\(t).slice\(j)", opType: "Gather", domain: "", inputs: [x, index], outputs: [slice],
                                          attributes: ["axis": .init(name: "axis", type: 2, i: axes[j])]))
                slices.append(slice)
            }
            let outs = try inline(body, of: node, tag: "\(t)", binding: states + slices)
            states = Array(outs.prefix(n))
            for j in 0..<k { pieces[j].append(outs[n + j]) }
        }
        for (out, v) in zip(node.outputs, states) where !out.isEmpty { try alias(out, to: v, node) }
        for (j, out) in node.outputs.dropFirst(n).enumerated() where !out.isEmpty {
            try stack(outReversed[j] ? pieces[j].reversed() : pieces[j], axis: outAxes[j], into: out, node)
        }
    }

    /// The GRAPH attribute `key` of `node`, or an error naming it.
    private func graphAttribute(_ node: ONNXFile.Node, _ key: String) throws -> ONNXFile.Subgraph {
        guard let a = node.attributes[key] else {
            throw ImportError.invalid(file: file, place: place(node), expected: "a graph attribute '\(key)'", actual: "none")
        }
        guard let g = a.g else {
            throw ImportError.invalid(file: file, place: "\(place(node)) \(key)", expected: "a graph (attribute type 5)", actual: "attribute type \(a.type)")
        }
        return g
    }

    /// The one value of constant input `index`, nil when the input is absent; an error when it is computed.
    private func knownScalar(_ node: ONNXFile.Node, _ index: Int, what: String) throws -> Double? {
        guard index < node.inputs.count, !node.inputs[index].isEmpty else { return nil }
        let name = try resolve(node.inputs[index], place: "\(place(node)) \(what)")
        guard let c = constants[name], c.values.count == 1, !c.values[0].isNaN, !isPartial(name) else {
            throw ImportError.invalid(file: file, place: "\(place(node)) \(what)", expected: "one value known at import (the loop is unrolled)",
                                      actual: constants[name].map { "shape \($0.shape)" } ?? "'\(node.inputs[index])', computed at run time")
        }
        return c.values[0]
    }

    /// Stores constant `c` under a fresh name derived from `base`.
    private mutating func addConstant(_ base: String, _ c: ONNXConstant) -> String {
        let name = fresh(base)
        constants[name] = c
        return name
    }

    /// `parts` (one per iteration) joined along a new axis `axis` into `out`: an Unsqueeze of each and a Concat,
    /// converted (or folded) like the file's own.
    private mutating func stack(_ parts: [String], axis: Int, into out: String, _ node: ONNXFile.Node) throws {
        guard !parts.isEmpty else {
            throw ImportError.invalid(file: file, place: "\(place(node)) scan output '\(out)'", expected: "at least one iteration (an empty tensor is not computed)",
                                      actual: "none")
        }
        var expanded: [String] = []
        for (i, p) in parts.enumerated() {
            var u = ONNXFile.Node(name: "\(node.name).\(out).\(i)", opType: "Unsqueeze", domain: "", inputs: [p], outputs: [fresh("\(out).\(i)")], attributes: [:])
            if opset >= 13 {
                u.inputs.append(addConstant("\(out).axes", ONNXConstant(shape: [1], values: [Double(axis)], isInteger: true)))
            } else {
                u.attributes["axes"] = .init(name: "axes", type: 7, ints: [axis])
            }
            try convert(u)
            expanded += u.outputs
        }
        try convert(ONNXFile.Node(name: "\(node.name).\(out)", opType: "Concat", domain: "", inputs: expanded, outputs: [out],
                                  attributes: ["axis": .init(name: "axis", type: 2, i: axis)]))
    }

    /// Every tensor name inside the GRAPH attributes of `nodes` (at any depth).
    static func subgraphNames(_ nodes: [ONNXFile.Node]) -> Set<String> {
        var names = Set<String>()
        for g in nodes.flatMap({ $0.attributes.values.compactMap(\.g) }) {
            names.formUnion(g.initializers.keys)
            names.formUnion(g.nodes.flatMap { $0.inputs + $0.outputs })
            names.formUnion(subgraphNames(g.nodes))
        }
        return names
    }

    /// The graph tensor a subgraph name stands for, or an error naming `place` when no graph defines it.
    private func resolve(_ name: String, place: String) throws -> String {
        let r = scope[name] ?? name
        guard shapes[r] != nil || constants[r] != nil else {
            throw ImportError.invalid(file: file, place: place, expected: "'\(name)' defined in the subgraph or an enclosing graph",
                                      actual: "undefined tensor")
        }
        return r
    }

    /// Makes `name` hold what `value` holds: the same constant, or an identity of the activation.
    private mutating func alias(_ name: String, to value: String, _ node: ONNXFile.Node) throws {
        if let c = constants[value] {
            constants[name] = c
            if let r = runTime[value] { runTime[name] = r }
            return
        }
        emit("\(node.name).\(name)", .identity, [value], name)
        shapes[name] = try shape(of: value, in: node)
    }
}
