/// A small graph of trainable layers — the top of a network that fine-tuning trains — run forward on a batch and
/// backward from the gradient of its output: convolutions (every `ConvGeometry` shape, a fused activation), residual
/// adds, global average pooling. Activations are NHWC; a pooled (N, 1, 1, C) map feeds a dense layer as a 1×1
/// convolution. Nodes are in topological order and the last one is the output; parameters (weights in the IR's
/// (KH, KW, C/groups, OC) layout, biases) live in one array so an `Optimizer` steps them together.
public struct TrainableGraph: Sendable {
    public struct Convolution: Sendable, Equatable {
        public var outChannels: Int, kernel: (Int, Int), strides = (1, 1), dilations = (1, 1)
        public var pads: (top: Int, left: Int, bottom: Int, right: Int) = (0, 0, 0, 0)
        public var groups = 1
        public var activation = TrainableActivation.identity
        /// Indices of the weights and the bias in `parameters`.
        public var weight: Int, bias: Int

        public init(outChannels: Int, kernel: (Int, Int), strides: (Int, Int) = (1, 1), dilations: (Int, Int) = (1, 1),
                    pads: (top: Int, left: Int, bottom: Int, right: Int) = (0, 0, 0, 0), groups: Int = 1,
                    activation: TrainableActivation = .identity, weight: Int, bias: Int) {
            (self.outChannels, self.kernel, self.strides, self.dilations) = (outChannels, kernel, strides, dilations)
            (self.pads, self.groups, self.activation, self.weight, self.bias) = (pads, groups, activation, weight, bias)
        }

        public static func == (a: Self, b: Self) -> Bool {
            a.outChannels == b.outChannels && a.kernel == b.kernel && a.strides == b.strides
                && a.dilations == b.dilations && a.pads == b.pads && a.groups == b.groups
                && a.activation == b.activation && a.weight == b.weight && a.bias == b.bias
        }
    }

    public enum Layer: Sendable, Equatable {
        case convolution(Convolution)
        /// The sum of two inputs of one shape, then an activation.
        case add(TrainableActivation)
        /// (N, H, W, C) → (N, 1, 1, C).
        case globalAveragePool
    }

    public struct Node: Sendable, Equatable {
        public var layer: Layer
        /// The nodes whose outputs it reads: an index into `nodes`, or `TrainableGraph.input`.
        public var inputs: [Int]
        public init(_ layer: Layer, inputs: [Int]) { (self.layer, self.inputs) = (layer, inputs) }
    }

    /// The `inputs` entry that names the graph's input.
    public static let input = -1
    public var nodes: [Node]
    public var parameters: [[Float]]

    public init(nodes: [Node], parameters: [[Float]]) throws {
        for (i, node) in nodes.enumerated() {
            let arity: Int
            switch node.layer {
            case let .convolution(c):
                arity = 1
                guard parameters.indices.contains(c.weight), parameters.indices.contains(c.bias) else {
                    throw TrainError.shapeMismatch(what: "trainable graph node \(i)", expected: "parameter indices in 0..<\(parameters.count)",
                                                   actual: "weight \(c.weight), bias \(c.bias)")
                }
            case .add: arity = 2
            case .globalAveragePool: arity = 1
            }
            guard node.inputs.count == arity, node.inputs.allSatisfy({ $0 == Self.input || (0..<i).contains($0) }) else {
                throw TrainError.shapeMismatch(what: "trainable graph node \(i) inputs", expected: "\(arity) earlier nodes or the input",
                                               actual: "\(node.inputs)")
            }
        }
        guard !nodes.isEmpty else {
            throw TrainError.shapeMismatch(what: "trainable graph", expected: "at least one node", actual: "none")
        }
        (self.nodes, self.parameters) = (nodes, parameters)
    }
}
