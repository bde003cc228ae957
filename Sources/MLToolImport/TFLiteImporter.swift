import Foundation
import MLToolCore

/// Imports a TensorFlow Lite flatbuffer (identifier "TFL3" at byte 4) into the NHWC IR: subgraph 0, its inputs and
/// outputs by tensor name, free dimensions from shape_signature (−1).
///
/// TFLite is NHWC like the IR, so activations keep their layout; CONV_2D weights (OC,KH,KW,C) are transposed to the
/// IR's (KH,KW,C,OC), depthwise (1,KH,KW,C·m) reshaped, FULLY_CONNECTED (OUT,IN) transposed. Constants (tensors with
/// data in a buffer) become model tensors in float32: float16 weights and DEQUANTIZE of a constant fold at import.
/// Every unsupported operator is listed, with counts, in one error (`TFLiteOps.converters` is the table). Quantized
/// models (full-integer int8/uint8 and dynamic-range int8 weights) import as the ONNX QDQ importer's IR: int8 weights,
/// activations as `quantize` nodes giving real values (`TFLiteGraphBuilder+Quantized.swift`); int16 activations and
/// ops without int8 semantics here are refused by name.
///
/// A detector mltool exported (docs/TFLITE-EXPORT.md) imports back as that detector: its "mltool" metadata entry
/// gives the detection settings, labels and preprocessing when no options are given, and the subgraph is read only
/// up to the heads (`endingAtHeads`), leaving its decoder and NMS operators out.
public enum TFLiteImporter {
    /// Reads the TFLite file at `path` and converts it, recording `options` (preprocessing, labels, feature tensor).
    public static func importModel(path: String, options: ImportOptions) throws -> Model {
        let tfl = try TFLiteFile(path: path)
        var model = try model(tfl, options: options)
        model.metadata.provenance = Provenance(sources: [.init(path: path, sha256: try SHA256.hex(fileAt: path))])
        return model
    }

    /// The import of bytes held in memory (no provenance): the fuzz target and the hostile-file tests.
    package static func importModel(bytes: [UInt8], file: String, options: ImportOptions = ImportOptions()) throws -> Model {
        try model(TFLiteFile(bytes: bytes, file: file), options: options)
    }

    /// Whether `bytes` start like a TFLite flatbuffer: "TFL3" at byte 4.
    public static func isTFLite(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.count >= 8 && bytes[4..<8].elementsEqual(Array(TFLiteFile.identifier.utf8))
    }

    static func model(_ source: TFLiteFile, options given: ImportOptions) throws -> Model {
        var tfl = source
        let file = tfl.file
        let options = try given.adoptingExportedDetector(recordedPairs(tfl), file: file, container: "metadata 'mltool'")
        if let d = options.detection { try endingAtHeads(&tfl, d.tensors) }
        try checkSupported(tfl)
        var builder = try TFLiteGraphBuilder(tfl)
        let graph = builder.graph
        for i in graph.inputs { try builder.addInput(i) }
        for (k, op) in graph.operators.enumerated() {
            let code = tfl.operatorCodes[op.opcode]
            let out = try op.outputs.first.map { try builder.tensor($0, "operator \(k) (\(code.name)) output") }
            let name = op.outputs.first.map(builder.name) ?? "operator_\(k)"
            guard out != nil, let convert = TFLiteOps.converters[code.name] else { continue }
            try builder.convertQuantized(convert, TFLiteCall(op: op, index: k, opName: code.name, node: name, output: name))
        }
        let outputs = try graph.outputs.map { i -> String in
            _ = try builder.tensor(i, "subgraph output")
            return builder.name(i)
        }
        let produced = Set(builder.nodes.flatMap(\.outputs)).union(builder.inputs.map(\.name))
        if let missing = outputs.first(where: { !produced.contains($0) }) {
            throw ImportError.invalid(file: file, place: "subgraph output '\(missing)'", expected: "a tensor computed by the graph",
                                      actual: "a constant or a tensor no operator makes")
        }
        if let image = options.image, let input = builder.inputs.first, input.shape.count == 4,
           (input.shape[1] >= 0 && input.shape[1] != image.height) || (input.shape[2] >= 0 && input.shape[2] != image.width) {
            throw ImportError.invalid(file: file, place: "input size", expected: "\(input.shape[1])×\(input.shape[2]) (the model's input '\(input.name)')",
                                      actual: "\(image.height)×\(image.width)")
        }
        let protected = outputs + (options.featureTensor.map { outputs.contains($0) ? [] : [$0] } ?? [])
        let ir = Graph(inputs: builder.inputs, outputs: protected, nodes: builder.nodes, sourceLayout: "nhwc")
        let task: ModelMetadata.Task = options.detection != nil ? .objectDetector : options.labels.isEmpty ? .network : .imageClassifier
        var metadata = ModelMetadata(task: task, graph: ir, labels: options.labels)
        metadata.name = graph.name.isEmpty ? ((file as NSString).lastPathComponent as NSString).deletingPathExtension : graph.name
        metadata.description = "imported from TensorFlow Lite" + (tfl.description.map { $0.isEmpty ? "" : " (\($0))" } ?? "")
        let last = builder.nodes.last { $0.outputs.contains(outputs.first ?? "") }
        metadata.outputKind = options.detection != nil ? nil : last?.op == .softmax ? "probabilities" : "logits"
        metadata.detection = options.detection
        metadata.image = options.image
        if let feature = options.featureTensor {
            guard produced.contains(feature) else {
                throw ImportError.invalid(file: file, place: "feature tensor", expected: "a tensor of the graph", actual: "'\(feature)'")
            }
            metadata.featureTensor = feature
        }
        var model = try GraphPasses.optimize(Model(metadata: metadata, tensors: builder.tensors))
        model.metadata.graph?.outputs = outputs
        let used = Set(model.metadata.graph?.nodes.flatMap(\.inputs) ?? [])
        model.tensors = model.tensors.filter { used.contains($0.name) }
        return model
    }

    /// The key/value pairs of the "mltool" metadata entry mltool's exporter writes (a JSON object of strings); empty
    /// when there is none or it is not such an object.
    static func recordedPairs(_ tfl: TFLiteFile) -> [String: String] {
        guard let entry = tfl.metadata.first(where: { $0.name == "mltool" }), entry.buffer > 0, entry.buffer < tfl.buffers.count,
              let pairs = try? JSONDecoder().decode([String: String].self, from: Data(tfl.flat.bytes[tfl.buffers[entry.buffer]])) else {
            return [:]
        }
        return pairs
    }

    /// Subgraph 0 cut to the operators the `heads` need, the heads its outputs: a detector mltool exported, read
    /// without the decoder and NMS it ends in (ImportOptions.detection names the heads).
    static func endingAtHeads(_ tfl: inout TFLiteFile, _ heads: [String]) throws {
        var g = tfl.subgraphs[0]
        let outputs = Set(g.outputs.compactMap { g.tensors.indices.contains($0) ? g.tensors[$0].name : nil })
        guard !heads.isEmpty, !heads.allSatisfy(outputs.contains) else { return }
        var byName: [String: Int] = [:]
        for (i, t) in g.tensors.enumerated() where byName[t.name] == nil { byName[t.name] = i }
        let targets = try heads.map { h in
            guard let i = byName[h] else {
                throw ImportError.invalid(file: tfl.file, place: "detection head '\(h)'", expected: "a tensor of subgraph 0", actual: "no tensor of that name")
            }
            return i
        }
        var producer: [Int: Int] = [:]
        for (k, op) in g.operators.enumerated() { for o in op.outputs where producer[o] == nil { producer[o] = k } }
        var needed = Set<Int>(), pending = targets
        while let t = pending.popLast() {
            guard let k = producer[t], needed.insert(k).inserted else { continue }
            pending += g.operators[k].inputs.filter { $0 >= 0 }
        }
        g.operators = g.operators.indices.filter(needed.contains).map { g.operators[$0] }
        g.outputs = targets
        tfl.subgraphs[0] = g
    }

    /// Every operator of subgraph 0 that the table lacks, in one error with counts and the first few output names,
    /// after the quantization parameters (`checkQuantization`). Opcode indices are checked here.
    static func checkSupported(_ tfl: TFLiteFile) throws {
        let graph = tfl.subgraphs[0]
        var counts: [String: (count: Int, nodes: [String])] = [:]
        var order: [String] = []
        for (k, op) in graph.operators.enumerated() {
            guard op.opcode >= 0, op.opcode < tfl.operatorCodes.count else {
                throw ImportError.invalid(file: tfl.file, place: "operator \(k) opcode_index",
                                          expected: "an index below \(tfl.operatorCodes.count)", actual: "\(op.opcode)")
            }
            let name = tfl.operatorCodes[op.opcode].name
            guard TFLiteOps.converters[name] == nil else { continue }
            if counts[name] == nil { order.append(name) }
            let node = op.outputs.first.flatMap { $0 >= 0 && $0 < graph.tensors.count ? graph.tensors[$0].name : nil } ?? "operator \(k)"
            counts[name, default: (0, [])].count += 1
            if counts[name, default: (0, [])].nodes.count < 3 { counts[name, default: (0, [])].nodes.append(node) }
        }
        try checkQuantization(tfl)
        if !order.isEmpty {
            throw ImportError.unsupported(file: tfl.file, ops: order.map { .init(op: $0, count: counts[$0]?.count ?? 0, firstNodes: counts[$0]?.nodes ?? []) })
        }
        // A sparse tensor is a constant DENSIFY reads, nothing else.
        let densified = Set(graph.operators.filter { tfl.operatorCodes[$0.opcode].name == "DENSIFY" }.flatMap(\.inputs))
        let readers = Set(graph.operators.filter { tfl.operatorCodes[$0.opcode].name != "DENSIFY" }.flatMap(\.inputs))
        if let (i, t) = graph.tensors.enumerated().first(where: { $0.element.isSparse && (!densified.contains($0.offset) || readers.contains($0.offset)) }) {
            throw ImportError.refused(file: tfl.file, place: "tensor \(i) '\(t.name)' sparsity",
                                      reason: "a sparse tensor must be a constant that only DENSIFY reads")
        }
    }

    /// Every tensor's quantization parameters: finite scales > 0, one per tensor or one per index of
    /// quantized_dimension, as many zero points (or none), int8/uint8 zero points inside their codes; activations
    /// (tensors no buffer holds) quantized only as int8 or uint8, with parameters when they are 8-bit.
    static func checkQuantization(_ tfl: TFLiteFile) throws {
        let graph = tfl.subgraphs[0]
        for (i, t) in graph.tensors.enumerated() {
            let place = "tensor \(i) '\(t.name)' quantization"
            let constant = t.buffer > 0 && t.buffer < tfl.buffers.count && !tfl.buffers[t.buffer].isEmpty
            let range = TFLiteGraphBuilder.codeRange(t.type)
            guard let q = t.quantization else {
                if range != nil && !constant {
                    throw ImportError.invalid(file: tfl.file, place: place, expected: "a scale and zero point for an \(TFLiteFile.typeName(t.type)) activation",
                                              actual: "none")
                }
                continue
            }
            if let bad = q.scales.first(where: { !($0.isFinite && $0 > 0) }) {
                throw ImportError.invalid(file: tfl.file, place: place + ".scale", expected: "finite scales > 0", actual: "\(bad)")
            }
            if q.scales.count > 1 {
                guard q.dimension >= 0, q.dimension < t.shape.count, t.shape[q.dimension] == q.scales.count else {
                    let axis = q.dimension >= 0 && q.dimension < t.shape.count ? "\(t.shape[q.dimension])" : "a dimension of \(t.shape)"
                    throw ImportError.invalid(file: tfl.file, place: place + ".scale",
                                              expected: "1 or \(axis) values (quantized_dimension \(q.dimension) of shape \(t.shape))",
                                              actual: "\(q.scales.count) values")
                }
            }
            guard q.zeroPoints.isEmpty || q.zeroPoints.count == q.scales.count else {
                throw ImportError.invalid(file: tfl.file, place: place + ".zero_point", expected: "\(q.scales.count) values (one per scale)",
                                          actual: "\(q.zeroPoints.count)")
            }
            if let range, let bad = q.zeroPoints.first(where: { !range.contains(Int($0)) }) {
                throw ImportError.invalid(file: tfl.file, place: place + ".zero_point",
                                          expected: "\(TFLiteFile.typeName(t.type)) codes in \(range.lowerBound)…\(range.upperBound)", actual: "\(bad)")
            }
            if !constant && range == nil && t.type != 0 {
                throw ImportError.refused(file: tfl.file, place: "tensor \(i) '\(t.name)' (\(TFLiteFile.typeName(t.type)))",
                                          reason: "quantized \(TFLiteFile.typeName(t.type)) activations are not supported (int8 and uint8 are)")
            }
        }
    }
}
