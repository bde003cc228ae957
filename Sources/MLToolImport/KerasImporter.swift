import Foundation
import MLToolCore

/// Imports full Keras models saved with `model.save("x.h5")` (Keras 2 / tf.keras and Keras 3) into the NHWC IR.
///
/// The file's root attribute `model_config` (JSON) gives the layers and how they connect (Sequential, or Functional
/// with Keras 2 list-style or Keras 3 dict-style inbound nodes); `model_weights/<layer>` holds each layer's weights,
/// named by its `weight_names` attribute. Keras is NHWC already and its conv kernels are (KH, KW, C, OC), so weights
/// are taken as they are (depthwise kernels only change shape). Layers that carry code (Lambda, custom objects)
/// are refused by name and never run; HDF5 soft and external links, external raw storage and virtual datasets are
/// refused. Every unsupported layer is listed in one error.
public enum KerasImporter {
    /// Reads the Keras HDF5 model at `path` and returns it as a Core model with `options` recorded in its metadata.
    public static func importModel(path: String, options: ImportOptions) throws -> Model {
        let source = try HDF5File.read(path: path) { try KerasSource(file: $0) }
        let file = source.file
        let (graph, tensors, outputShape) = try buildGraph(source, options: options)

        var metadata = ModelMetadata(task: options.labels.isEmpty ? .network : .imageClassifier, graph: graph,
                                     labels: options.labels)
        metadata.name = source.config.name
        metadata.description = "Keras \(source.kerasVersion ?? "?") model"
            + (source.backend.map { " (\($0) backend)" } ?? "") + " imported from HDF5"
        metadata.outputKind = finalOp(of: graph) == .softmax ? "probabilities" : "logits"
        metadata.image = options.image
        if let feature = options.featureTensor {
            guard graph.nodes.contains(where: { $0.outputs.contains(feature) }) else {
                throw ImportError.invalid(file: file, place: "feature tensor", expected: "a tensor of the graph",
                                          actual: "'\(feature)'")
            }
            metadata.featureTensor = feature
        }
        if !options.labels.isEmpty, let classes = outputShape.last, classes > 0,
           classes != options.labels.count {
            throw ImportError.invalid(file: file, place: "labels", expected: "\(classes) labels (one per output)",
                                      actual: "\(options.labels.count)")
        }
        let sha256: String
        do { sha256 = try SHA256.hex(fileAt: path) } catch { throw ImportError.unreadable(file: file, reason: "\(error)") }
        metadata.provenance = Provenance(sources: [.init(path: path, sha256: sha256)])
        return Model(metadata: metadata, tensors: tensors)
    }

    /// Whether the file at `path` is HDF5 (by its signature, as libhdf5 finds it), i.e. one this importer should
    /// be given. False for missing or unreadable files.
    public static func isHDF5(path: String) -> Bool {
        (try? HDF5File.isHDF5(path: path)) ?? false
    }

    /// The op that computes the first output, looking through identity nodes.
    static func finalOp(of graph: Graph) -> Op? {
        guard var name = graph.outputs.first else { return nil }
        while let node = graph.nodes.last(where: { $0.outputs.contains(name) }) {
            guard node.op == .identity, let input = node.inputs.first else { return node.op }
            name = input
        }
        return nil
    }

    // MARK: - Graph

    /// The graph, its weight tensors and the shape of its first output.
    private static func buildGraph(_ source: KerasSource, options: ImportOptions) throws
        -> (Graph, [StoredTensor], [Int]) {
        let file = source.file
        var builder = KerasGraphBuilder(file: file, kerasMajor: source.kerasMajor, weights: source.weights,
                                        inputSize: options.inputSize ?? options.image.map { ($0.height, $0.width) })
        var produced: [KerasTensorRef: String] = [:]
        var pending: [(layer: KerasLayer, call: Int)] = []
        for layer in source.config.layers {
            if layer.className == "InputLayer" {
                let shape = try inputShape(layer, file: file, size: builder.inputSize)
                builder.addInput(layer.name, shape: shape)
                produced[KerasTensorRef(layer: layer.name, node: 0, index: 0)] = layer.name
            } else {
                pending += layer.calls.indices.map { (layer, $0) }
            }
        }
        // Layers are listed in topological order by Keras; converting in dependency order also copes with any other.
        while !pending.isEmpty {
            var next: [(layer: KerasLayer, call: Int)] = []
            for item in pending {
                let refs = item.layer.calls[item.call]
                let inputs = refs.compactMap { produced[$0] }
                guard inputs.count == refs.count, !refs.isEmpty else {
                    next.append(item)
                    continue
                }
                guard let converter = KerasLayerConverters.table[item.layer.className] else { continue }
                let name = item.call == 0 ? item.layer.name : "\(item.layer.name)@\(item.call)"
                let call = KerasCall(layer: item.layer, inputs: inputs, output: name, node: name)
                produced[KerasTensorRef(layer: item.layer.name, node: item.call, index: 0)] =
                    try converter.convert(&builder, call)
            }
            guard next.count < pending.count else {
                let item = next[0]
                let missing = item.layer.calls[item.call].filter { produced[$0] == nil }
                throw ImportError.invalid(file: file, place: "layer '\(item.layer.name)' inbound_nodes",
                                          expected: "inputs produced by other layers",
                                          actual: missing.isEmpty ? "no inputs" : "unknown \(missing.map(\.description).joined(separator: ", "))")
            }
            pending = next
        }

        var outputs: [String] = []
        for ref in source.config.outputs {
            guard let name = produced[ref] else {
                throw ImportError.invalid(file: file, place: "model_config output_layers", expected: "a produced tensor",
                                          actual: ref.description)
            }
            let wanted = ref.node == 0 ? ref.layer : "\(ref.layer)@\(ref.node)"
            if name != wanted, !builder.hasTensor(wanted) {
                // The output layer was the identity at inference (Dropout, linear Activation): keep its name.
                builder.emit(wanted, .identity, [name], output: wanted, shape: builder.shape(name))
                outputs.append(wanted)
            } else {
                outputs.append(name)
            }
        }
        let graph = Graph(inputs: builder.inputs, outputs: outputs, nodes: builder.nodes, sourceLayout: "nhwc")
        return (graph, builder.tensors, builder.shape(outputs.first ?? ""))
    }

    /// The input's shape with the batch as -1; free H and W of an image input take `size` when given.
    private static func inputShape(_ layer: KerasLayer, file: String, size: (height: Int, width: Int)?) throws -> [Int] {
        let place = "layer '\(layer.name)' batch_shape"
        guard let list = (layer.config.value("batch_shape") ?? layer.config.value("batch_input_shape")) as? [Any],
              list.count >= 2 else {
            throw ImportError.invalid(file: file, place: place, expected: "a shape of rank ≥ 2",
                                      actual: "\(layer.config.value("batch_shape") ?? layer.config.value("batch_input_shape") ?? "nothing")")
        }
        var shape = try list.dropFirst().map { v -> Int in
            if v is NSNull { return -1 }
            guard let d = jsonInt(v), d > 0 else {
                throw ImportError.invalid(file: file, place: place, expected: "positive sizes", actual: "\(list)")
            }
            return d
        }
        if shape.count == 3, let size {
            for (i, want) in [(0, size.height), (1, size.width)] {
                if shape[i] < 0 {
                    shape[i] = want
                } else if shape[i] != want {
                    throw ImportError.invalid(file: file, place: "input '\(layer.name)' size",
                                              expected: "\(shape[0])×\(shape[1]) (fixed by the model)",
                                              actual: "\(size.height)×\(size.width)")
                }
            }
        }
        return [-1] + shape
    }
}

/// What the importer reads from the file while it is open: the parsed config, the Keras version, and every
/// layer's weights. Checks for code-carrying and unsupported layers happen before any weight is read.
struct KerasSource {
    var file: String
    var config: KerasModelConfig
    var kerasVersion: String?
    var backend: String?
    var kerasMajor: Int
    var weights: [String: KerasLayerWeights] = [:]

    init(file h5: HDF5File) throws {
        file = h5.name
        let root = h5.root
        guard h5.hasAttribute("model_config", of: root) else {
            throw ImportError.invalid(file: file, place: "/ attribute 'model_config'",
                                      expected: "a full model saved with model.save()",
                                      actual: "no model config (a weights-only file?)")
        }
        config = try KerasModelConfig.parse(h5.string("model_config", of: root), file: file)
        kerasVersion = h5.hasAttribute("keras_version", of: root) ? try? h5.string("keras_version", of: root) : nil
        backend = h5.hasAttribute("backend", of: root) ? try? h5.string("backend", of: root) : nil
        if let v = kerasVersion, let major = Int(v.prefix { $0.isNumber }) {
            kerasMajor = major
        } else {
            // No version attribute: Keras 3 writes "batch_shape" where Keras 2 wrote "batch_input_shape".
            kerasMajor = config.layers.contains { $0.config["batch_shape"] != nil } ? 3 : 2
        }
        try Self.refuseCode(config.layers, file: file)
        try Self.checkSupported(config.layers, file: file, kerasMajor: kerasMajor)
        try readWeights(h5)
    }

    /// Refuses the first layer that carries code: Lambda, a class from a module outside Keras, an object registered
    /// by a package ("package>Name"), or a serialized Python lambda anywhere in its config.
    static func refuseCode(_ layers: [KerasLayer], file: String) throws {
        for layer in layers {
            let place = "layer '\(layer.name)' (\(layer.className))"
            if layer.className == "Lambda" || layer.className == "TFOpLambda" || layer.className == "SlicingOpLambda" {
                throw ImportError.refused(file: file, place: place,
                                          reason: "the layer carries Python code, which mltool never runs")
            }
            if let reason = codeCarrier(layer.entry.isEmpty ? layer.config : layer.entry) {
                throw ImportError.refused(file: file, place: place, reason: reason)
            }
        }
    }

    private static func codeCarrier(_ value: Any) -> String? {
        if let list = value as? [Any] { return list.lazy.compactMap(codeCarrier).first }
        guard let dict = value as? [String: Any] else { return nil }
        if dict.string("class_name") == "__lambda__" {
            return "it holds a serialized Python lambda, which mltool never runs"
        }
        if dict["class_name"] != nil, let module = dict.string("module"),
           !(module == "keras" || module.hasPrefix("keras.") || module.hasPrefix("tf_keras")) {
            return "it uses a custom object from module '\(module)', whose code mltool never runs"
        }
        if let registered = dict.string("registered_name"), registered.contains(">") {
            return "it uses the custom object '\(registered)', whose code mltool never runs"
        }
        for key in dict.keys.sorted() {
            if let value = dict[key], let reason = codeCarrier(value) { return reason }
        }
        return nil
    }

    /// Throws one `unsupported` error listing every layer the importer cannot convert, grouped by reason.
    static func checkSupported(_ layers: [KerasLayer], file: String, kerasMajor: Int) throws {
        var order: [String] = []
        var byKind: [String: [String]] = [:]
        for layer in layers {
            guard let problem = KerasLayerConverters.problem(layer, kerasMajor: kerasMajor) else { continue }
            if byKind[problem] == nil { order.append(problem) }
            byKind[problem, default: []].append(layer.name)
        }
        guard order.isEmpty else {
            throw ImportError.unsupported(file: file, ops: order.map {
                .init(op: $0, count: byKind[$0]?.count ?? 0, firstNodes: Array((byKind[$0] ?? []).prefix(3)))
            })
        }
    }

    /// Reads `weight_names` and the datasets of every layer listed in `layer_names` (under `model_weights`, or the
    /// root for files that keep them there).
    private mutating func readWeights(_ h5: HDF5File) throws {
        let base = try h5.exists("model_weights", in: h5.root) ? try h5.open("model_weights", in: h5.root) : h5.root
        let listed: Set<String>? = h5.hasAttribute("layer_names", of: base)
            ? Set(try h5.strings("layer_names", of: base)) : nil
        for layer in config.layers where layer.className != "InputLayer" {
            if let listed, !listed.contains(layer.name) { continue }
            guard try h5.exists(layer.name, in: base) else { continue }
            let group = try h5.open(layer.name, in: base)
            guard h5.isGroup(group), h5.hasAttribute("weight_names", of: group) else { continue }
            var weights = KerasLayerWeights()
            for name in try h5.strings("weight_names", of: group) {
                let (shape, data) = try h5.readFloats(h5.open(name, in: group))
                weights.entries.append(.init(name: name, shape: shape, data: data))
            }
            self.weights[layer.name] = weights
        }
    }
}
