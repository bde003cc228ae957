import Foundation
import MLToolCore

/// Imports full Keras models saved with `model.save("x.h5")` (Keras 2 / tf.keras and Keras 3) into the NHWC IR.
///
/// The file's root attribute `model_config` (JSON) gives the layers and how they connect (Sequential, or Functional
/// with Keras 2 list-style or Keras 3 dict-style inbound nodes); `model_weights/<layer>` holds each layer's weights,
/// named by its `weight_names` attribute. Keras is NHWC already and its conv kernels are (KH, KW, C, OC), so weights
/// are taken as they are (depthwise kernels only change shape). channels_first layers keep Keras's (N, C, H, W) order
/// between them (KerasLayerConverters+ChannelsFirst.swift); an image input only they read is taken as (N, H, W, C). Layers that carry code (Lambda, custom objects)
/// are refused by name and never run; HDF5 soft and external links, external raw storage and virtual datasets are
/// refused. Every unsupported layer is listed in one error.
public enum KerasImporter {
    /// Reads the Keras HDF5 model at `path` and returns it as a Core model with `options` recorded in its metadata.
    public static func importModel(path: String, options: ImportOptions) throws -> Model {
        let source = try HDF5File.read(path: path) { try KerasSource(file: $0) }
        var model = try model(source, options: options)
        let sha256: String
        do { sha256 = try SHA256.hex(fileAt: path) } catch { throw ImportError.unreadable(file: source.file, reason: "\(error)") }
        model.metadata.provenance = Provenance(sources: [.init(path: path, sha256: sha256)])
        return model
    }

    /// The import with no file and no libhdf5: `replies` are what the sandboxed HDF5 reader would answer (see
    /// `HDF5File.replaying`). The fuzz target of the parent's side of the sandbox.
    package static func importModel(replayingReplies replies: [UInt8], file: String) throws -> Model {
        let source = try HDF5File.replaying(replies: replies, file: file) { try KerasSource(file: $0) }
        return try model(source, options: ImportOptions())
    }

    /// The model of a Keras file read (no provenance yet).
    private static func model(_ source: KerasSource, options: ImportOptions) throws -> Model {
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
        return Model(metadata: metadata, tensors: tensors)
    }

    /// Whether the file at `path` is HDF5 (by its signature, as libhdf5 finds it), i.e. one this importer should
    /// be given. False for missing or unreadable files.
    public static func isHDF5(path: String) -> Bool {
        HDF5File.isHDF5(path: path)
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
        var channelsFirstInput = false
        var pending: [(layer: KerasLayer, call: Int)] = []
        for layer in source.config.layers {
            if layer.className == "InputLayer" {
                let image = KerasLayerConverters.isChannelsFirstImage(layer, in: source.config.layers)
                let shape = try inputShape(layer, file: file, size: builder.inputSize, channelsFirst: image)
                builder.addInput(layer.name, shape: shape)
                var tensor = layer.name
                if image, shape.count == 4 {
                    channelsFirstInput = true
                    // Taken as (N, H, W, C), as images come; the layers read it as Keras's (N, C, H, W).
                    tensor = layer.name + ".nchw"
                    builder.emit(tensor, .transpose, [layer.name], output: tensor,
                                 shape: [shape[0], shape[3], shape[1], shape[2]], Attributes(perm: [0, 3, 1, 2]))
                }
                produced[KerasTensorRef(layer: layer.name, node: 0, index: 0)] = tensor
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
                let scalars = item.call < item.layer.scalars.count ? item.layer.scalars[item.call] : [:]
                let call = KerasCall(layer: item.layer, inputs: inputs, output: name, node: name, scalars: scalars)
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
        // `mltool run` takes a channels_first image as Keras does, (N, C, H, W), when no output is of rank 4 (those
        // stay in Keras's order, which the "nchw" layout would transpose).
        let nchw = channelsFirstInput && outputs.allSatisfy { builder.shape($0).count != 4 }
        let graph = Graph(inputs: builder.inputs, outputs: outputs, nodes: builder.nodes, sourceLayout: nchw ? "nchw" : "nhwc")
        return (graph, builder.tensors, builder.shape(outputs.first ?? ""))
    }

    /// The input's shape with the batch as -1; free H and W of an image input take `size` when given. A
    /// `channelsFirst` image's (C, H, W) is given as (H, W, C), the shape the graph takes it in.
    static func inputShape(_ layer: KerasLayer, file: String, size: (height: Int, width: Int)?,
                           channelsFirst: Bool = false) throws -> [Int] {
        let place = "layer '\(layer.name)' batch_shape"
        // Keras 3 writes batch_shape, Keras 2 batch_input_shape; a bare "shape" leaves the batch out.
        let bare: Any? = (layer.config.value("shape") as? [Any]).map { [NSNull()] + $0 }
        let given: Any? = layer.config.value("batch_shape") ?? layer.config.value("batch_input_shape") ?? bare
        guard let list = given as? [Any], list.count >= 2 else {
            throw ImportError.invalid(file: file, place: place, expected: "a shape of rank ≥ 2",
                                      actual: "\(given ?? "nothing")")
        }
        var shape = try list.dropFirst().map { v -> Int in
            if v is NSNull { return -1 }
            guard let d = jsonInt(v), d > 0 else {
                throw ImportError.invalid(file: file, place: place, expected: "positive sizes", actual: "\(list)")
            }
            return d
        }
        if channelsFirst, shape.count == 3 { shape = [shape[1], shape[2], shape[0]] }
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
