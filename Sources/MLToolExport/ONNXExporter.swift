import Foundation
import MLToolCore

/// Writes an image model as one ONNX graph (opset 13): input `image` NCHW float32 (N, C, H, W) holding the
/// *preprocessed* image, output the model's first graph output (probabilities for trained classifiers).
///
/// The preprocessing is not in the graph: it is documented in `metadata_props` (`preprocessing`, a sentence, and
/// `preprocessing.json`, the exact parameters), next to `labels` (JSON array), `output_kind`, `provenance` (JSON),
/// `author`, `license`, `version`, `weights` (how quantized weights were stored).
///
/// An object detector (`metadata.detection`) ends in its decoder and non-maximum suppression instead: one image in,
/// `detected_boxes` (K, 4), `detected_scores` (K) and `detected_labels` (K, int64) out (`ONNXDetection.swift`), with
/// `detection` (the decoder and NMS settings as JSON) and `detection_outputs` (a sentence) in `metadata_props`.
///
/// A tabular model becomes an ONNX-ML tree ensemble instead (`ONNXTreeEnsemble`).
public enum ONNXExporter {
    /// Exports `model`; `name` identifies it in errors (usually its path). A detector needs `headShapes`: the IR shape
    /// (N, H, W, channels) of every head tensor of its decoder (`ModelExport` runs the network once to learn them).
    public static func export(_ model: Model, name: String, headShapes: [String: [Int]] = [:]) throws -> ExportResult {
        if model.metadata.task == .tabular { return try ONNXTreeEnsemble.export(model, name: name) }
        let md = model.metadata
        let graph = try ExportResult.graph(
            of: model, name: name, format: "ONNX",
            textReason: "its features come from a tokenizer, n-gram vocabulary and TF-IDF weighting that ONNX's standard "
                + "operators cannot express on raw strings; export an image model, or run text models with `mltool predict`")
        var lowering = ONNXLowering(model: model, name: name, graph: graph)
        try lowering.lower()
        var extra: [(String, String)] = []
        if let detection = md.detection {
            guard let image = md.image else {
                throw ExportError.unsupported(model: name, format: "ONNX", place: "preprocessing",
                                              reason: "a detector needs its input size (import with --input-size)")
            }
            try lowering.lowerDetection(detection, inputWidth: image.width, inputHeight: image.height, headShapes: headShapes)
            extra = [("detection", ExportMetadata.json(detection)), ("detection_outputs", ExportMetadata.detectionSentence(detection, labelType: "int64"))]
        }
        var program = lowering.program
        program.graphName = md.name ?? "mltool"
        program.docString = md.description ?? "exported by mltool \(MLToolInfo.version)"
        var notes = lowering.notes
        if lowering.int8Weights > 0 {
            notes.append("\(lowering.int8Weights) int8 weight tensors as int8 initializers + DequantizeLinear (per output channel); "
                + "onnxruntime's default optimizations run them as int8 kernels, session.disable_quant_qdq=1 keeps float math")
        }
        program.metadata = ExportMetadata.pairs(md, notes: notes, inputLayout: "NCHW") + extra
        return ExportResult(bytes: try ONNXWriter.pack(program, modelName: name), notes: lowering.notes)
    }
}
