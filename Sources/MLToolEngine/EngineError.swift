import MLToolCore

/// Errors raised while validating or running a graph; each names the node or tensor at fault.
public enum EngineError: MLToolError, Equatable {
    /// The model has no graph (e.g. a text classifier).
    case noGraph
    /// A node reads a tensor that no graph input, model tensor or earlier node provides.
    case unknownTensor(node: String, tensor: String)
    /// A node lacks an attribute its op needs.
    case missingAttribute(node: String, op: String, attribute: String)
    /// An attribute or input count has a value the op cannot use.
    case invalidAttribute(node: String, attribute: String, expected: String, actual: String)
    /// An input's shape does not fit the op.
    case shapeMismatch(node: String, what: String, expected: String, actual: [Int])
    /// A weight tensor could not be loaded.
    case badWeights(node: String, tensor: String, reason: String)
    /// `run` was given a name that is not a graph input, or not given a graph input.
    case unknownInput(name: String)
    case missingInput(name: String)
    /// A run input's shape does not match the graph input's.
    case inputShape(name: String, expected: [Int], actual: [Int])
    /// A run input's value does not fit the graph input's integer or bool element type.
    case inputValue(name: String, expected: String, actual: String)
    /// `run` asked for a tensor the graph does not have.
    case unknownOutput(name: String)
    /// A tensor of the graph that no compiled step writes: the original graph's compilation absorbed it too (an int8
    /// layer's float output its requantizing reader replaced).
    case notComputed(name: String)
    /// Running the graph on these input shapes needs more memory (activations and scratch, bytes; nil: more than
    /// an Int counts) than the machine has.
    case tooLarge(inputs: String, bytes: Int?, available: Int)

    public var exitStatus: ExitStatus { .dataError }

    public var description: String {
        switch self {
        case .noGraph: return "model has no graph to run"
        case let .unknownTensor(node, tensor): return "node '\(node)': unknown tensor '\(tensor)'"
        case let .missingAttribute(node, op, attribute):
            return "node '\(node)' (\(op)): missing attribute '\(attribute)'"
        case let .invalidAttribute(node, attribute, expected, actual):
            return "node '\(node)': \(attribute): expected \(expected), found \(actual)"
        case let .shapeMismatch(node, what, expected, actual):
            return "node '\(node)': \(what): shape \(actual), expected \(expected)"
        case let .badWeights(node, tensor, reason): return "node '\(node)': weights '\(tensor)': \(reason)"
        case let .unknownInput(name): return "input '\(name)' is not an input of the graph"
        case let .missingInput(name): return "graph input '\(name)' was not given"
        case let .inputShape(name, expected, actual):
            return "input '\(name)': shape \(actual), expected \(expected) (-1: any)"
        case let .inputValue(name, expected, actual): return "input '\(name)': expected \(expected), found \(actual)"
        case let .unknownOutput(name): return "output '\(name)' is not a tensor of the graph"
        case let .notComputed(name): return "tensor '\(name)' is not computed when the graph runs (absorbed into the layer that reads it)"
        case let .tooLarge(inputs, bytes, available):
            return "inputs \(inputs) need \(bytes.map { "\($0 >> 20) MiB" } ?? "more bytes than an Int counts") of activations, "
                + "more than this machine's \(available >> 20) MiB"
        }
    }
}
