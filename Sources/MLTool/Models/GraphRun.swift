import Foundation
import MLToolCore
import MLToolEngine

/// `mltool run`: a model's raw graph on NumPy tensors, in the source framework's layout (NCHW for models imported
/// from ONNX, NHWC otherwise). Integer and bool `.npy` inputs (token ids, masks, states) are read as float32 values,
/// which is how the engine carries them.
public struct GraphRun {
    public let model: Model
    public let graph: Graph
    /// Where the model was read from (error messages).
    public let path: String

    public init(model: Model, path: String) throws {
        self.model = model
        self.path = path
        self.graph = try ModelLoader.graph(model, path)
    }

    /// The graph inputs fed from `specs`: each `NAME=FILE.npy`, or a plain file taken by position.
    public func inputs(_ specs: [String]) throws -> [String: Tensor] {
        let named = specs.compactMap { spec -> (String, String)? in
            guard let eq = spec.firstIndex(of: "="), graph.inputs.contains(where: { $0.name == spec[..<eq] }) else { return nil }
            return (String(spec[..<eq]), String(spec[spec.index(after: eq)...]))
        }
        let files: [(String, String)]
        if named.count == specs.count {
            files = named
        } else if named.isEmpty && specs.count == graph.inputs.count {
            files = zip(graph.inputs.map(\.name), specs).map { ($0, $1) }
        } else {
            throw PipelineError.badInput(file: path, reason: "the model has \(graph.inputs.count) input(s) (\(graph.inputs.map(\.name).joined(separator: ", "))); give each as NAME=FILE.npy, or all of them in order")
        }
        let missing = graph.inputs.map(\.name).filter { n in !files.contains { $0.0 == n } }
        guard missing.isEmpty else {
            throw PipelineError.badInput(file: path, reason: "no tensor for input(s) \(missing.joined(separator: ", "))")
        }
        var feeds = [String: Tensor]()
        for (name, file) in files {
            guard let spec = graph.inputs.first(where: { $0.name == name }) else { continue }
            var (t, dtype) = try NPY.readTyped(path: file)
            if let type = spec.elementType, dtype.dropFirst().hasPrefix("f") {
                throw PipelineError.badInput(file: file, reason: "input '\(name)' is \(type) in the model, and this file holds floats (\(dtype)): give an integer .npy (numpy: x.astype(np.\(type == "bool" ? "bool_" : type)))")
            }
            if graph.sourceLayout == "nchw" && t.rank == 4 { t = Layout.transpose(t, [0, 2, 3, 1]) }
            guard t.rank == spec.shape.count, zip(t.shape, spec.shape).allSatisfy({ $1 < 0 || $0 == $1 }) else {
                throw PipelineError.badInput(file: file, reason: "shape \(t.shape) does not fit input '\(spec.name)' \(spec.shape) (IR layout NHWC)")
            }
            feeds[name] = t
        }
        return feeds
    }

    /// Runs the graph and returns `outputs` (the graph's first output when empty) in the source layout.
    public func run(_ feeds: [String: Tensor], outputs: [String], threads: Int = 0) throws -> [(name: String, tensor: Tensor)] {
        let names = outputs.isEmpty ? Array(graph.outputs.prefix(1)) : outputs
        let engine = try Engine(model: model, threads: threads)
        let out = try engine.run(feeds, outputs: names)
        return try names.map { name in
            guard var t = out[name] else { throw PipelineError.badInput(file: path, reason: "no tensor named '\(name)'") }
            if graph.sourceLayout == "nchw" && t.rank == 4 { t = Layout.transpose(t, [0, 3, 1, 2]) }
            return (name, t)
        }
    }

    /// A file name for tensor `name` in a folder of outputs: characters other than letters, digits, `.`, `_` and `-`
    /// become `_`.
    public static func fileName(for name: String) -> String {
        String(name.map { $0.isLetter || $0.isNumber || "._-".contains($0) ? $0 : "_" }) + ".npy"
    }
}
