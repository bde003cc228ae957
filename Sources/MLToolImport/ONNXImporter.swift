import Foundation
import MLToolCore

/// Imports an ONNX model (IR version 3 or later, default-domain opsets 6–28) into a native `Model` whose graph is
/// the NHWC IR described in `Graph`.
///
/// Weights are converted to float32 in IR layout, constant shape arithmetic is folded, `GraphPasses.optimize` folds
/// BatchNormalization into convolutions and fuses activations, and every unsupported op is reported in one error.
public enum ONNXImporter {
    /// TensorProto element types a graph may take: float32, float16 (exact in float32), float64 (rounded to
    /// float32), the integers and bool (carried as float32 values).
    static let inputElementTypes: Set<Int32> = [1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13]
    /// Element types a graph may give: float32, the integers and bool (exact), and float16 / float64, which the engine
    /// computes in float32 (a float16 result keeps more precision, a float64 one less, than the file's type).
    static let outputElementTypes: Set<Int32> = [1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13]

    /// The default-domain opsets whose semantics the importer implements. For the supported ops, versions 22–28
    /// only add element types (bfloat16, float8, int4, float6, signed BitShift …), so their semantics are those of
    /// opset 21, except SpaceToDepth's `mode` (28, read) and Range's `stash_type` (27, float16 only); opset 6 adds
    /// the legacy `broadcast`/`axis` attributes of Add/Sub/Mul/Div and `is_test` of Dropout, both handled.
    public static let opsets = 6...28

    /// Reads the ONNX file at `path` and converts it, recording `options` (preprocessing, labels, feature tensor).
    /// A file mltool exported from a detector gives the detector back when no options are given (its
    /// `metadata_props` hold the settings; the graph is read up to its heads).
    public static func importModel(path: String, options given: ImportOptions) throws -> Model {
        var onnx = try ONNXFile(path: path)
        let options = try given.adoptingExportedDetector(onnx.metadata, file: path, container: "metadata_props")
        if let d = options.detection { endingAtHeads(&onnx, d.tensors) }
        onnx.nodes = ONNXGraphBuilder.fusingDynamicQuantization(onnx.nodes, constants: onnx.initializers,
                                                                 outputs: Set(onnx.outputs.map(\.name)))
        try checkSupported(onnx, file: path)
        guard opsets.contains(onnx.opset) else {
            throw ImportError.invalid(file: path, place: "opset_import", expected: "ai.onnx opset \(opsets.lowerBound)–\(opsets.upperBound)",
                                      actual: "\(onnx.opset)")
        }
        var builder = ONNXGraphBuilder(file: path, opset: onnx.opset, constants: onnx.initializers,
                                       reservedNames: try reservedNames(onnx, path: path))
        try checkElementTypes(onnx, path: path)
        var inputs = try graphInputs(onnx, options, &builder, path: path)
        let joined = onnx.outputs.map(\.name) + (options.featureTensor.map { [$0] } ?? [])
        let (converted, nms) = try Self.converted(builder, onnx, path: path, outputs: joined)
        builder = converted
        if !builder.forks.isEmpty { builder.nodes = builder.pruned(outputs: joined) }
        // The batch (first axis) is free unless the graph mixes it with other axes.
        if builder.batchFree {
            for i in inputs.indices where !inputs[i].shape.isEmpty { inputs[i].shape[0] = -1 }
        }

        var outputs = onnx.outputs.map(\.name)
        var detection = options.detection
        if let n = nms {
            guard options.detection == nil else {
                throw ImportError.invalid(file: path, place: builder.place(n), expected: "no detection options (the graph's NonMaxSuppression sets them)",
                                          actual: "detection options")
            }
            let (config, tensors) = try builder.detectionFromNMS(n, graphOutputs: outputs)
            detection = config
            outputs = tensors
        }
        try checkOutputs(builder, outputs, detection: detection, inputs: inputs, options, path: path)
        // The passes keep every graph output's name: list the feature tensor as an output while they run.
        let protected = outputs + (options.featureTensor.map { outputs.contains($0) ? [] : [$0] } ?? [])
        let graph = Graph(inputs: inputs, outputs: protected, nodes: builder.nodes, sourceLayout: "nchw")
        let metadata = try importedMetadata(graph, builder, onnx, outputs: outputs, detection: detection, options, path: path)
        let tensors = builder.weightOrder.compactMap { name -> StoredTensor? in
            guard let w = builder.weights[name] else { return nil }
            return storedTensor(name, shape: w.shape, values: w.values, quant: w.quant)
        }
        var model = try GraphPasses.optimize(Model(metadata: metadata, tensors: tensors))
        model.metadata.graph?.outputs = outputs
        // Keep only the weights the final graph reads (folding leaves the originals unused).
        let used = Set(model.metadata.graph?.nodes.flatMap(\.inputs) ?? [])
        model.tensors = model.tensors.filter { used.contains($0.name) }
        return model
    }

    /// Detection options naming inner tensors (an exported detector's heads, before the decoder and NMS the export
    /// appended): the graph ends at them, and only the nodes they need are read.
    private static func endingAtHeads(_ onnx: inout ONNXFile, _ heads: [String]) {
        guard !heads.isEmpty, !heads.allSatisfy(Set(onnx.outputs.map(\.name)).contains) else { return }
        let producers = Dictionary(onnx.nodes.enumerated().flatMap { i, n in n.outputs.map { ($0, i) } }, uniquingKeysWith: { a, _ in a })
        var needed = Set<Int>(), pending = heads
        while let t = pending.popLast() {
            guard let i = producers[t], needed.insert(i).inserted else { continue }
            pending += onnx.nodes[i].inputs
        }
        onnx.nodes = onnx.nodes.indices.filter(needed.contains).map { onnx.nodes[$0] }
        onnx.outputs = heads.map { ONNXFile.ValueInfo(name: $0, shape: nil, elemType: 1) }
    }

    /// Every name the file uses, those inside If branches and loop bodies too: fresh names never shadow one of them.
    /// A value made by two nodes has no single meaning: refused.
    private static func reservedNames(_ onnx: ONNXFile, path: String) throws -> Set<String> {
        var reserved = Set<String>()
        var producer: [String: String] = [:]
        reserved.formUnion(ONNXGraphBuilder.subgraphNames(onnx.nodes))
        for n in onnx.nodes {
            reserved.formUnion(n.inputs)
            reserved.formUnion(n.outputs)
            for out in n.outputs where !out.isEmpty {
                if let first = producer[out] {
                    throw ImportError.invalid(file: path, place: "node '\(n.name)' output '\(out)'",
                                              expected: "a name no other node produces", actual: "also produced by node '\(first)'")
                }
                producer[out] = n.name
            }
        }
        return reserved
    }

    /// The engine computes float32; integer and bool tensors (token ids, masks, indices, flags) flow through it as
    /// float32 values, exact below 2^24. Other element types (strings, complex) would change meaning.
    private static func checkElementTypes(_ onnx: ONNXFile, path: String) throws {
        for (kind, values) in [("input", onnx.inputs.filter { onnx.initializers[$0.name] == nil }), ("output", onnx.outputs)] {
            for v in values {
                if let t = v.elemType, !(kind == "input" ? Self.inputElementTypes : Self.outputElementTypes).contains(t) {
                    throw ImportError.invalid(
                        file: path, place: "graph \(kind) '\(v.name)'", expected: "a number or bool element type (mltool computes in float32)",
                        actual: TensorReader.elementTypes[t]?.name ?? (t == 8 ? "string" : "element type \(t)"))
                }
            }
        }
    }

    /// The graph's inputs (initializers aside) in IR order, free image sizes pinned by `--input-size`; their shapes and
    /// element types recorded in `builder`.
    private static func graphInputs(_ onnx: ONNXFile, _ options: ImportOptions, _ builder: inout ONNXGraphBuilder,
                                    path: String) throws -> [GraphInput] {
        var inputs: [GraphInput] = []
        for input in onnx.inputs where onnx.initializers[input.name] == nil {
            guard var shape = input.shape else {
                throw ImportError.invalid(file: path, place: "graph input '\(input.name)'", expected: "a tensor type with a shape",
                                          actual: "no shape")
            }
            if shape.count == 4, let size = options.inputSize {
                if shape[2] < 0 { shape[2] = size.height }
                if shape[3] < 0 { shape[3] = size.width }
            }
            guard ONNXGraphBuilder.product(ArraySlice(shape.filter { $0 >= 0 })) != Int.max else {
                throw ImportError.invalid(file: path, place: "graph input '\(input.name)'", expected: "a shape whose size fits in memory",
                                          actual: "\(shape)")
            }
            builder.shapes[input.name] = shape
            builder.elementTypes[input.name] = input.elemType
            let type = input.elemType.flatMap { TensorReader.elementTypes[$0]?.name }
            inputs.append(GraphInput(name: input.name, shape: Layout.irShape(shape),
                                     elementType: type.flatMap { GraphInput.integerRanges[$0] != nil ? $0 : nil }))
            // The file's names of the dimensions still free (a size --input-size pins loses its name).
            let names = zip(input.dimensionNames, shape).map { name, size in size < 0 ? name : "" }
            if names.count == shape.count, names.contains(where: { !$0.isEmpty }) {
                inputs[inputs.count - 1].dimensionNames = Layout.irOrder(names)
            }
        }
        return inputs
    }

    /// The outputs and the feature tensor are computed; detection settings, labels and the preprocessing's image size
    /// agree with the graph.
    private static func checkOutputs(_ builder: ONNXGraphBuilder, _ outputs: [String], detection: DetectionConfig?,
                                     inputs: [GraphInput], _ options: ImportOptions, path: String) throws {
        for o in outputs where builder.shapes[o] == nil {
            throw ImportError.invalid(file: path, place: "graph output '\(o)'", expected: "a tensor computed from the inputs",
                                      actual: builder.constants[o] != nil ? "a constant" : "undefined")
        }
        if let f = options.featureTensor, builder.shapes[f] == nil {
            throw ImportError.invalid(file: path, place: "feature tensor", expected: "a tensor computed by the graph",
                                      actual: "'\(f)'")
        }
        if let d = detection {
            try builder.checkDetection(d, outputs: outputs, labels: options.labels, input: inputs.first?.shape ?? [])
        } else if !options.labels.isEmpty, let first = outputs.first, let classes = builder.shapes[first]?.last, classes >= 0,
           classes != options.labels.count {
            throw ImportError.invalid(file: path, place: "labels", expected: "\(classes) names (one per class of output '\(first)')",
                                      actual: "\(options.labels.count)")
        }
        if let image = options.image, let input = inputs.first, input.shape.count == 4,
           (input.shape[1] >= 0 && input.shape[1] != image.height) || (input.shape[2] >= 0 && input.shape[2] != image.width) {
            throw ImportError.invalid(file: path, place: "input size", expected: "\(input.shape[1])×\(input.shape[2]) (the model's input '\(input.name)')",
                                      actual: "\(image.height)×\(image.width)")
        }
    }

    /// The imported model's metadata: its task, names, provenance (the file's hash) and the options it records.
    private static func importedMetadata(_ graph: Graph, _ builder: ONNXGraphBuilder, _ onnx: ONNXFile, outputs: [String],
                                         detection: DetectionConfig?, _ options: ImportOptions, path: String) throws -> ModelMetadata {
        var metadata = ModelMetadata(task: detection != nil ? .objectDetector : options.labels.isEmpty ? .network : .imageClassifier, graph: graph,
                                     labels: options.labels,
                                     provenance: Provenance(sources: [.init(path: path, sha256: try SHA256.hex(fileAt: path))]))
        metadata.name = ((path as NSString).lastPathComponent as NSString).deletingPathExtension
        metadata.description = onnx.producer.isEmpty ? "imported from ONNX" : "imported from ONNX (\(onnx.producer))"
        let last = builder.nodes.last { $0.outputs.contains(outputs.first ?? "") }
        metadata.outputKind = last?.op == .softmax ? "probabilities" : "logits"
        metadata.featureTensor = options.featureTensor
        metadata.image = options.image
        metadata.detection = detection
        if detection != nil { metadata.outputKind = nil }
        return metadata
    }

    /// `base` (its inputs set) after converting the file's nodes, once per variant when a rank-varying If needs
    /// them (`ONNXGraphBuilder+Variants`: each variant takes `assumptions` for the Ifs met first), merged.
    static func converted(_ base: ONNXGraphBuilder, _ onnx: ONNXFile, path: String, outputs: [String],
                          assumptions: [Bool] = []) throws -> (ONNXGraphBuilder, ONNXFile.Node?) {
        var builder = base
        builder.assumptions = assumptions
        do {
            let nms = try convertNodes(&builder, onnx, path: path)
            return (builder, nms)
        } catch let fork as ONNXGraphBuilder.NeedsVariants {
            guard 2 << assumptions.count <= ONNXGraphBuilder.maxVariants else {
                throw ImportError.invalid(file: path, place: fork.place,
                                          expected: "at most \(ONNXGraphBuilder.maxVariants) variants of the graph (each If whose branches differ in rank on a condition known only at run time, and each free dimension a Squeeze without axes may drop, doubles them)",
                                          actual: "more")
            }
            // A variant whose values do not fit the rest of the graph (silero-vad's decoder: an LSTM cell fed a
            // sequence) is one the source framework fails on too: the other is kept alone, for the shapes it takes.
            let variants = [true, false].map { choice in
                Result { try converted(base, onnx, path: path, outputs: outputs, assumptions: assumptions + [choice]) }
            }
            switch (variants[0], variants[1]) {
            case (.success(var then), .success(var otherwise)):
                // Variants whose outputs differ in rank cannot join: on a size (known when planning), the one whose
                // ranks the file declares stays.
                let fits = [then.0, otherwise.0].map { b in
                    onnx.outputs.allSatisfy { o in o.shape.map { b.shapes[o.name]?.count == $0.count } ?? true }
                }
                if fits[0] != fits[1], then.0.forks[assumptions.count].sized {
                    if fits[0] { then.0.guardVariant(depth: assumptions.count, outputs: outputs, taken: true); return then }
                    otherwise.0.guardVariant(depth: assumptions.count, outputs: outputs, taken: false)
                    return otherwise
                }
                try then.0.merge(otherwise.0, depth: assumptions.count, outputs: outputs)
                return then
            case (.success(var only), .failure(let e)), (.failure(let e), .success(var only)):
                guard e is ImportError else { throw e }
                only.0.guardVariant(depth: assumptions.count, outputs: outputs, taken: only.0.assumptions[assumptions.count])
                return only
            case (.failure(let e), _), (_, .failure(let e)):
                throw e
            }
        }
    }

    /// Converts the file's nodes in order into `builder`; returns the NonMaxSuppression node, which the engine
    /// runs after the graph.
    static func convertNodes(_ builder: inout ONNXGraphBuilder, _ onnx: ONNXFile, path: String) throws -> ONNXFile.Node? {
        var nms: ONNXFile.Node?
        for node in onnx.nodes {
            if node.opType == "NonMaxSuppression" {
                guard nms == nil else {
                    throw ImportError.invalid(file: path, place: builder.place(node), expected: "one NonMaxSuppression", actual: "several")
                }
                nms = node
                continue
            }
            if let n = nms, node.inputs.contains(where: { n.outputs.contains($0) }) {
                throw ImportError.invalid(file: path, place: builder.place(node),
                                          expected: "nothing computed from NonMaxSuppression's selected indices (mltool runs NMS after the graph)",
                                          actual: "an input '\(node.inputs.first { n.outputs.contains($0) } ?? "")'")
            }
            try builder.convert(node)
        }
        return nms
    }

    /// Throws one error naming every unsupported op type, with its count and first node names.
    static func checkSupported(_ onnx: ONNXFile, file: String) throws {
        var counts: [String: (count: Int, names: [String], order: Int)] = [:]
        // The nodes of If branches and Loop / Scan bodies count too: every missing op is named at once.
        var pending = onnx.nodes[...]
        while let node = pending.popFirst() {
            for a in node.attributes.values.sorted(by: { $0.name < $1.name }) { if let g = a.g { pending += g.nodes } }
            let key = ONNXOps.key(node)
            if ONNXOps.converters[key] != nil { continue }
            var entry = counts[key] ?? (0, [], counts.count)
            entry.count += 1
            if entry.names.count < 3 { entry.names.append(node.name) }
            counts[key] = entry
        }
        guard counts.isEmpty else {
            let ops = counts.sorted { $0.value.order < $1.value.order }
                .map { ImportError.Unsupported(op: $0.key, count: $0.value.count, firstNodes: $0.value.names) }
            throw ImportError.unsupported(file: file, ops: ops)
        }
    }
}
