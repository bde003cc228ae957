import MLToolCore

/// Writes an image model as a TensorFlow Lite flatbuffer (schema version 3, file identifier "TFL3") for LiteRT's
/// interpreter: one subgraph, input the model's graph input as float32 NHWC (N, H, W, C) holding the *preprocessed*
/// image (as the ONNX export's, in TFLite's own layout), batch free; output the model's first graph output
/// (probabilities for trained classifiers). Weights keep their storage behind a DEQUANTIZE (`TFLiteWeights`): int8
/// as TFLite int8 with mltool's scales and zero points, palettes with an int8 table as the int8 they equal, float-table
/// palettes as int8 or float16 (the nearer), f16 as float16; activations are float32. `notes` lists every weight so
/// kept.
///
/// The preprocessing, labels and provenance are in the model's metadata: the entry "mltool" holds the same key/value
/// pairs as the ONNX export's metadata_props, as a JSON object; the entry "TFLITE_METADATA" the TFLite Support
/// metadata (`TFLiteMetadata`: normalization, image size, labels.txt, which is appended to the file as a zip).
public enum TFLiteExporter {
    /// Exports `model`; `name` identifies it in errors (usually its path). `shapes`: the IR shape of every tensor the
    /// graph computes for one image at the model's input size (`ModelExport.tensorShapes` infers them).
    public static func export(_ model: Model, name: String, shapes: [String: [Int]]) throws -> ExportResult {
        let md = model.metadata
        let graph = try ExportResult.graph(
            of: model, name: name, format: "TensorFlow Lite",
            textReason: "its features come from a tokenizer, n-gram vocabulary and TF-IDF weighting that TFLite's builtin "
                + "operators cannot express on raw strings; export an image model, or run text models with `mltool predict`")
        guard md.detection == nil else {
            throw ExportError.unsupported(model: name, format: "TensorFlow Lite", place: "detection",
                                          reason: "a detector's decoder and NMS are not written as TFLite operators yet; export to ONNX or Core ML")
        }
        var lowering = TFLiteLowering(model: model, name: name, graph: graph, shapes: shapes)
        try lowering.lower()
        var program = lowering.program
        program.description = md.description ?? "exported by mltool \(MLToolInfo.version)"
        var notes = Array(Set(lowering.notes)).sorted()
        var pairs = [String: String]()
        for (k, v) in ExportMetadata.pairs(md, notes: notes, inputLayout: "NHWC") { pairs[k] = v }
        program.metadata.append((name: "mltool", buffer: program.buffer(Array(ExportMetadata.json(pairs).utf8))))
        let support = try TFLiteMetadata.buffer(md, input: graph.inputs.first?.name ?? "", output: graph.outputs.first ?? "", notes: &notes)
        program.metadata.append((name: "TFLITE_METADATA", buffer: program.buffer(support)))
        var bytes = try TFLiteWriter.pack(program, modelName: name)
        if !md.labels.isEmpty {
            let labels = Array(md.labels.joined(separator: "\n").utf8) + [0x0a]
            bytes += TFLiteMetadata.zip([(TFLiteMetadata.labelFile, labels)], prefixLength: bytes.count)
        }
        return ExportResult(bytes: bytes, notes: notes)
    }
}
