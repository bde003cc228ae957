import MLToolCore

extension TrainableGraph {
    /// Where to cut a model's graph to fine-tune its last `convolutions` convolutions before `output`: the input of
    /// the `convolutions`-th convolution from the end, moved up to the start of any skip connection that would cross
    /// it (a residual block is trained whole or not at all), so that `top(of:from:to:)` can take the rest.
    public static func cut(in model: Model, before output: String, convolutions: Int) throws -> String {
        guard let graph = model.metadata.graph else {
            throw TrainError.notYetSupported(what: "fine-tuning a model without a graph")
        }
        let weights = Set(model.tensors.map(\.name))
        let path = GraphPasses.nodes(graph.nodes, feeding: [output]).nodes
        let convs = path.filter { $0.op == .conv }
        guard convolutions > 0, convolutions <= convs.count, let first = convs[convs.count - convolutions].inputs.first else {
            throw TrainError.shapeMismatch(what: "fine-tuning the last convolutions before '\(output)'",
                                           expected: "1...\(convs.count)", actual: "\(convolutions)")
        }
        let position = Dictionary(path.enumerated().flatMap { i, n in n.outputs.map { ($0, i) } }, uniquingKeysWith: { a, _ in a })
        var cut = first, tried: Set<String> = []
        while tried.insert(cut).inserted {
            var downstream: Set<String> = [cut]
            var crossing: [String] = []
            for node in graph.nodes(reachingBackTo: output, from: cut) {
                crossing += node.inputs.filter { !downstream.contains($0) && !weights.contains($0) && !$0.isEmpty }
                downstream.formUnion(node.outputs)
            }
            guard let earliest = crossing.min(by: { (position[$0] ?? -1) < (position[$1] ?? -1) }), earliest != cut else { return cut }
            cut = earliest
        }
        throw TrainError.notYetSupported(what: "fine-tuning the last \(convolutions) convolutions before '\(output)': "
                                         + "no single tensor separates them from the layers before")
    }
}
