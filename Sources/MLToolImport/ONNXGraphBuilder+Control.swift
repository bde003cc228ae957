import MLToolCore

/// ONNX control flow, inlined into the graph: If.
///
/// A branch's nodes are converted by this same builder under new names: every tensor the branch makes (its
/// initializers and node outputs) gets a fresh name, recorded in `scope` while the branch converts, so that a nested
/// If's branches resolve it too; any other name is a tensor of an enclosing graph, read as it is. An If whose
/// condition folds at import inlines only the taken branch (no IR op of its own); otherwise both branches are
/// inlined and each output is an `ifElse` of the two values (same shape: `Program+Shapes.swift`).
extension ONNXGraphBuilder {
    /// The branch attributes of an If, in order: then, else.
    static let ifBranches = [("then_branch", "then"), ("else_branch", "else")]

    mutating func ifNode(_ node: ONNXFile.Node) throws {
        let branches = try Self.ifBranches.map { key, _ -> ONNXFile.Subgraph in
            guard let a = node.attributes[key] else {
                throw ImportError.invalid(file: file, place: place(node), expected: "a graph attribute '\(key)'", actual: "none")
            }
            guard let g = a.g else {
                throw ImportError.invalid(file: file, place: "\(place(node)) \(key)", expected: "a graph (attribute type 5)",
                                          actual: "attribute type \(a.type)")
            }
            return g
        }
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
            guard !c.values[0].isNaN, !runTimeComparisons.contains(cond) else {
                // The lead's symbolic dimensions will let the engine decide these when it plans an input shape.
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
        let values = try branches.indices.map { try inline(branches[$0], of: node, tag: Self.ifBranches[$0].1) }
        for (i, out) in node.outputs.enumerated() where !out.isEmpty {
            let pair = [values[0][i], values[1][i]]
            let (a, b) = (try shape(of: pair[0], in: node), try shape(of: pair[1], in: node))
            guard a.count == b.count else {
                throw ImportError.invalid(file: file, place: "\(place(node)) output \(i) '\(out)'",
                                          expected: "branch values of one rank (the condition is known only at run time)",
                                          actual: "shapes \(a) and \(b)")
            }
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
    mutating func inline(_ g: ONNXFile.Subgraph, of node: ONNXFile.Node, tag: String, into targets: [String] = []) throws -> [String] {
        let outer = scope
        defer { scope = outer }
        let at = "\(place(node)) \(tag)"
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
            if runTimeComparisons.contains(value) { runTimeComparisons.insert(name) }
            return
        }
        emit("\(node.name).\(name)", .identity, [value], name)
        shapes[name] = try shape(of: value, in: node)
    }
}
