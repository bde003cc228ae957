import MLToolCore

extension TrainableGraph {
    /// The part of a model's graph between the tensor `cut` and the tensor `output`, as a trainable graph with the
    /// model's weights: what fine-tuning trains while the layers before the cut stay frozen (their output at the cut
    /// is cached). Convolutions keep their fused activation (folded batch norms train as the convolution's own
    /// weights and bias), residual adds, global average pooling, a reshape or flatten of a pooled (N, 1, 1, C) map,
    /// and dense layers (as 1×1 convolutions) are taken; any other op, or a node that reads a tensor computed before
    /// the cut other than the cut itself (a skip connection across it), is refused by name.
    /// `parameterNames` gives each parameter's tensor in the model, so the trained values can be written back.
    public static func top(of model: Model, from cut: String, to output: String) throws
        -> (graph: TrainableGraph, parameterNames: [String]) {
        guard let graph = model.metadata.graph else {
            throw TrainError.notYetSupported(what: "fine-tuning a model without a graph")
        }
        var builder = TopBuilder(model: model, cut: cut)
        for node in graph.nodes(reachingBackTo: output, from: cut) { try builder.add(node) }
        guard let last = builder.index[output], last == builder.nodes.count - 1 else {
            throw TrainError.shapeMismatch(what: "fine-tuning the layers from '\(cut)' to '\(output)'",
                                           expected: "'\(output)' computed from '\(cut)'", actual: "no path between them")
        }
        return (try TrainableGraph(nodes: builder.nodes, parameters: builder.parameters), builder.parameterNames)
    }
}

extension Graph {
    /// The nodes, in order, that lie on a path from the tensor `from` to the tensor `to`.
    func nodes(reachingBackTo to: String, from: String) -> [Node] {
        var downstream: Set<String> = [from]
        return GraphPasses.nodes(nodes, feeding: [to]).nodes.filter { node in
            guard node.inputs.contains(where: downstream.contains) else { return false }
            downstream.formUnion(node.outputs)
            return true
        }
    }
}

/// Turns IR nodes into trainable nodes, one at a time.
private struct TopBuilder {
    let model: Model
    let cut: String
    var nodes: [TrainableGraph.Node] = []
    var parameters: [[Float]] = []
    var parameterNames: [String] = []
    /// The trainable node that computes each tensor (TrainableGraph.input for the cut).
    var index: [String: Int]

    init(model: Model, cut: String) {
        (self.model, self.cut, index) = (model, cut, [cut: TrainableGraph.input])
    }

    mutating func add(_ node: Node) throws {
        switch node.op {
        case .conv, .dense:
            let c = try convolution(node)
            try append(.convolution(c), reading: [node.inputs[0]], for: node)
        case .add:
            try append(.add(try activation(node.attributes.activation, node)), reading: Array(node.inputs.prefix(2)), for: node)
        case .globalAvgPool:
            try append(.globalAveragePool, reading: [node.inputs[0]], for: node)
        case .reshape, .flatten:
            // Only of a pooled map, whose NHWC (N, 1, 1, C) and (N, C) are the same values.
            guard let source = node.inputs.first, let producer = index[source], producer >= 0,
                  nodes[producer].layer == .globalAveragePool, let out = node.outputs.first else {
                throw refusal(node, "a reshape that is not of a pooled map")
            }
            index[out] = producer
        default:
            throw refusal(node, "the op \(node.op.rawValue)")
        }
    }

    private mutating func append(_ layer: TrainableGraph.Layer, reading inputs: [String], for node: Node) throws {
        let sources = try inputs.map { name in
            guard let i = index[name] else { throw refusal(node, "its input '\(name)', computed before '\(cut)'") }
            return i
        }
        nodes.append(TrainableGraph.Node(layer, inputs: sources))
        for out in node.outputs { index[out] = nodes.count - 1 }
    }

    private mutating func convolution(_ node: Node) throws -> TrainableGraph.Convolution {
        guard node.inputs.count >= 2, let w = model.tensor(named: node.inputs[1]) else {
            throw refusal(node, "weights that are not stored in the model")
        }
        let weights = try w.floats()
        let a = node.attributes
        let (kernel, outChannels): ((Int, Int), Int)
        if node.op == .dense {
            guard w.shape.count == 2 else { throw refusal(node, "dense weights of shape \(w.shape)") }
            (kernel, outChannels) = ((1, 1), w.shape[1])
        } else {
            guard w.shape.count == 4 else { throw refusal(node, "convolution weights of shape \(w.shape)") }
            (kernel, outChannels) = ((w.shape[0], w.shape[1]), w.shape[3])
        }
        var bias = [Float](repeating: 0, count: outChannels)
        var biasName = node.name + ".bias (added)"
        if node.inputs.count > 2, let b = model.tensor(named: node.inputs[2]) {
            (bias, biasName) = (try b.floats(), node.inputs[2])
        }
        parameters += [weights, bias]
        parameterNames += [node.inputs[1], biasName]
        let pads = a.pads ?? [0, 0, 0, 0]
        guard pads.count == 4, a.autoPad == nil else { throw refusal(node, "pads \(pads) \(a.autoPad ?? "")") }
        return TrainableGraph.Convolution(
            outChannels: outChannels, kernel: kernel, strides: pair(a.strides), dilations: pair(a.dilations),
            pads: (pads[0], pads[1], pads[2], pads[3]), groups: a.groups ?? 1,
            activation: try activation(a.activation, node), weight: parameters.count - 2, bias: parameters.count - 1)
    }

    private func activation(_ a: Activation?, _ node: Node) throws -> TrainableActivation {
        guard let a else { return .identity }
        switch a.op {
        case .relu: return .relu
        case .clip where a.min == 0 && a.max == 6: return .relu6
        case .sigmoid: return .sigmoid
        case .hardSwish: return .hardSwish
        case .swish where (a.alpha ?? 1) == 1: return .silu
        case .identity: return .identity
        default: throw refusal(node, "the fused activation \(a.op.rawValue)")
        }
    }

    private func pair(_ v: [Int]?) -> (Int, Int) {
        guard let v, v.count == 2 else { return (1, 1) }
        return (v[0], v[1])
    }

    private func refusal(_ node: Node, _ what: String) -> TrainError {
        .notYetSupported(what: "fine-tuning node '\(node.name)' (\(node.op.rawValue)): \(what)")
    }
}
