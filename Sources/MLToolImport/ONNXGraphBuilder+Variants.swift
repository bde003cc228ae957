import MLToolCore

/// An If whose branches give values of different ranks, on a condition known only at run time (silero-vad's
/// decoder squeezes the frame axis when there is one frame): the IR gives each value one rank, so the graph after
/// such an If is converted once per branch — a *variant* — and the variants join at the graph outputs.
///
/// The importer converts the file with a list of `assumptions` (the branch each such If takes, in the order they
/// are met); an If met with no assumption left throws `NeedsVariants`, and the importer converts the file again
/// under both choices (`ONNXImporter.variants`). The conversions are identical up to that If (`Fork.nodes`), so
/// the merged graph is that common part, each variant's own nodes after it (renamed apart), and an `ifElse` per
/// graph output on the If's condition: planning an input shape resolves the condition (a plan-time value) and runs
/// only the variant it takes (`Program+Resolve.swift`). Within a variant, an If's untaken branch stays in the graph
/// unread; `pruned()` drops what no output reads.
extension ONNXGraphBuilder {
    /// The most variants one file converts to (each rank-varying If met doubles them).
    static let maxVariants = 16

    /// Where the conversion stood when a rank-varying If took its assumed branch.
    struct Fork {
        var nodes: Int
        var weights: Int
        var condition: String
        var place: String
        /// The branches of Ifs on run-time conditions the rank-varying If sits in (`branchPath`).
        var path: [(condition: String, taken: Bool)]
        /// Whether the condition is a size (a Squeeze's): always known when the engine plans.
        var sized = false
    }

    /// Thrown by an If whose branches differ in rank when no assumption is left for it.
    struct NeedsVariants: Error {
        var place: String
    }

    /// Whether the branch values of an If differ in rank for some output.
    func ranksDiffer(_ values: [[String]], _ node: ONNXFile.Node) throws -> Bool {
        try zip(values[0], values[1]).contains { try shape(of: $0.0, in: node).count != shape(of: $0.1, in: node).count }
    }

    /// Takes the assumed branch of a rank-varying If (`values`: each branch's outputs), or throws `NeedsVariants`.
    mutating func assumeBranch(_ node: ONNXFile.Node, condition: String, values: [[String]], before: (nodes: Int, weights: Int)) throws -> [String] {
        guard forks.count < assumptions.count else { throw NeedsVariants(place: place(node)) }
        let taken = assumptions[forks.count] ? 0 : 1
        forks.append(Fork(nodes: before.nodes, weights: before.weights, condition: condition, place: place(node), path: branchPath))
        return values[taken]
    }

    /// Squeeze without axes drops every axis of size 1 — for a free dimension, a rank that depends on the input
    /// (AECMOS squeezes a batch of 1 this way). Each free dimension is a fork on whether it is 1 at run time (an IR
    /// `shape` of it compared with 1, computed before the fork): returns `x`'s shape with the dimensions this variant
    /// assumes to be 1 set to 1, or throws `NeedsVariants`.
    mutating func assumeSqueezedSizes(_ node: ONNXFile.Node, _ x: (name: String, shape: [Int])) throws -> [Int] {
        var assumed = x.shape
        for axis in x.shape.indices where x.shape[axis] < 0 {
            guard forks.count < assumptions.count else { throw NeedsVariants(place: place(node)) }
            let size = fresh("\(node.name).size\(axis)"), isOne = fresh("\(node.name).size\(axis).is_one")
            emit(size, .shape, [x.name], size, Attributes(perm: [Layout.irAxis(axis, rank: x.shape.count)]))
            shapes[size] = [1]
            let one = addWeight("\(node.name).one", shape: [1], values: [1])
            emit(isOne, .binary, [size, one], isOne, Attributes(mode: BinaryFunction.equal.rawValue))
            shapes[isOne] = [1]
            if assumptions[forks.count] { assumed[axis] = 1 }
            forks.append(Fork(nodes: nodes.count, weights: weightOrder.count, condition: isOne, place: place(node), path: branchPath,
                              sized: true))
        }
        return assumed
    }

    /// Joins `other`, the variant that took the else branch at `forks[depth]`, to this one (which took then):
    /// `other`'s nodes and weights after the fork under names of their own, and each graph output made after the
    /// fork as an ifElse of the two variants' values.
    mutating func merge(_ other: ONNXGraphBuilder, depth: Int, outputs: [String]) throws {
        let fork = forks[depth]
        var rename: [String: String] = [:]
        for name in other.weightOrder[fork.weights...] {
            guard let w = other.weights[name] else { continue }
            if let mine = weights[name], mine.shape == w.shape, mine.values == w.values, mine.quant == w.quant { continue }
            rename[name] = addWeight(name, shape: w.shape, values: w.values, quant: w.quant)
        }
        let suffix = other.nodes[fork.nodes...]
        for n in suffix {
            for o in n.outputs { rename[o] = fresh("\(o).else") }
        }
        let thenName = renameOutputs(after: fork, outputs: outputs, tag: "then")
        for n in suffix {
            var m = n
            m.inputs = n.inputs.map { rename[$0] ?? $0 }
            m.outputs = n.outputs.map { rename[$0] ?? $0 }
            for (o, r) in zip(n.outputs, m.outputs) { shapes[r] = other.shapes[o] }
            nodes.append(m)
        }
        for o in outputs {
            guard let t = thenName[o], let e = rename[o], let a = shapes[t], let b = other.shapes[o] else { continue }
            guard a.count == b.count else {
                throw ImportError.invalid(file: file, place: "\(fork.place) (graph output '\(o)')",
                                          expected: "graph outputs of one rank whichever branch the If takes", actual: "shapes \(a) and \(b)")
            }
            emit("\(o).variant", .ifElse, [fork.condition, t, e], o)
            shapes[o] = zip(a, b).map { $0 == $1 ? $0 : -1 }
        }
        batchFree = batchFree && other.batchFree
    }

    /// Renames the graph outputs that nodes after `fork` make (`outputs`) to fresh names tagged `tag`; returns them.
    private mutating func renameOutputs(after fork: Fork, outputs: [String], tag: String) -> [String: String] {
        let made = Set(nodes[fork.nodes...].flatMap(\.outputs))
        var renamed: [String: String] = [:]
        for o in outputs where made.contains(o) { renamed[o] = fresh("\(o).\(tag)") }
        for i in nodes.indices.dropFirst(fork.nodes) {
            nodes[i].inputs = nodes[i].inputs.map { renamed[$0] ?? $0 }
            nodes[i].outputs = nodes[i].outputs.map { renamed[$0] ?? $0 }
        }
        for (o, r) in renamed { shapes[r] = shapes[o] }
        return renamed
    }

    /// Keeps this variant alone when the other does not convert (its values do not fit the rest of the graph): each
    /// graph output made after the fork becomes a two-input ifElse, which refuses input shapes that would take the
    /// other branch. `taken`: whether this variant took the then branch.
    mutating func guardVariant(depth: Int, outputs: [String], taken: Bool) {
        let fork = forks[depth]
        let renamed = renameOutputs(after: fork, outputs: outputs, tag: taken ? "then" : "else")
        var condition = taken ? fork.condition : negation(fork.condition)
        // Inside the branch of an If on a run-time condition (silero-vad's sample rate), the variant only has to hold
        // when that branch is taken: not(path) or condition, as not(path · not(condition)).
        for (c, t) in fork.path.reversed() {
            let inPath = t ? negation(negation(c)) : negation(c)
            let both = fresh("\(condition).within")
            emit(both, .mul, [inPath, negation(condition)], both)
            shapes[both] = shapes[condition]
            condition = negation(both)
        }
        for o in outputs {
            guard let r = renamed[o] else { continue }
            emit("\(o).variant", .ifElse, [condition, r], o)
            shapes[o] = shapes[r]
        }
    }

    /// 1 where `x` is 0, else 0 (a new value).
    private mutating func negation(_ x: String) -> String {
        let y = fresh("\(x).not")
        emit(y, .unary, [x], y, Attributes(mode: UnaryFunction.not.rawValue))
        shapes[y] = shapes[x]
        return y
    }

    /// The nodes some graph output (or `keep`) reads, directly or not, in their order.
    func pruned(outputs: [String]) -> [Node] {
        GraphPasses.nodes(nodes, feeding: outputs).nodes
    }
}
