import Foundation
import MLToolCore

/// Writes an image model as one ONNX graph (opset 13): input `image` NCHW float32 (N, C, H, W) holding the
/// *preprocessed* image, output the model's first graph output (probabilities for trained classifiers).
///
/// The preprocessing is not in the graph: it is documented in `metadata_props` (`preprocessing`, a sentence, and
/// `preprocessing.json`, the exact parameters), next to `labels` (JSON array), `output_kind`, `provenance` (JSON),
/// `author`, `license`, `version`, `weights` (how quantized weights were stored).
public enum ONNXExporter {
    /// Exports `model`; `name` identifies it in errors (usually its path).
    public static func export(_ model: Model, name: String) throws -> ExportResult {
        let md = model.metadata
        let graph = try ExportResult.graph(
            of: model, name: name, format: "ONNX",
            textReason: "its features come from a tokenizer, n-gram vocabulary and TF-IDF weighting that ONNX's standard "
                + "operators cannot express on raw strings; export an image model, or run text models with `mltool predict`")
        var lowering = ONNXLowering(model: model, name: name, graph: graph)
        try lowering.lower()
        var program = lowering.program
        program.graphName = md.name ?? "mltool"
        program.docString = md.description ?? "exported by mltool \(MLToolInfo.version)"
        var notes = lowering.notes
        if lowering.int8Weights > 0 {
            notes.append("\(lowering.int8Weights) int8 weight tensors as int8 initializers + DequantizeLinear (per output channel); "
                + "onnxruntime's default optimizations run them as int8 kernels, session.disable_quant_qdq=1 keeps float math")
        }
        program.metadata = ExportMetadata.pairs(md, notes: notes, inputLayout: "NCHW")
        return ExportResult(bytes: try ONNXWriter.pack(program, modelName: name), notes: lowering.notes)
    }
}
