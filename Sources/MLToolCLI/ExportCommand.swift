import Foundation
import MLTool

extension CLI {
    static let export = CommandSpec(
        name: "export", abstract: "Export a model for ONNX Runtime, Core ML or TensorFlow Lite.",
        arguments: "MODEL",
        discussion: """
        --to onnx writes one ONNX graph (opset 13): input 'image', NCHW float32 holding the preprocessed image; the
        preprocessing, labels and provenance are in metadata_props. int8 weights stay int8 (DequantizeLinear per
        channel); palettized weights are stored as float32 (noted in metadata_props 'weights').
        --to coreml writes a Core ML NeuralNetworkClassifier (specification version 5: iOS 14 / macOS 11): an RGB
        image input with the preprocessing as an image scaler, outputs 'classLabel' and a probability dictionary.
        Object detectors: ONNX gets the decoder and NMS in the graph (outputs detected_boxes, detected_scores,
        detected_labels); Core ML a pipeline ending in NonMaximumSuppression, for Vision (docs/COREML.md).
        --to tflite writes a TensorFlow Lite flatbuffer (schema 3) for LiteRT: input float32 NHWC holding the
        preprocessed image, batch free; weights stay compressed behind a DEQUANTIZE (int8 and int8-table palettes as
        int8 with their scales, f16 as float16, float-table palettes as the nearer of the two), activations float32;
        labels, preprocessing and provenance in its metadata, labels.txt zipped at its end (docs/TFLITE-EXPORT.md).
        Detectors (anchor-free, anchor-grid and boxes decoders) get the decoder and NMS as builtin operators (the
        same outputs as ONNX's, labels int32).
        Text classifiers are refused (their tokenizer is not expressible in these formats).
        """,
        options: [
            OptionSpec("--to", value: "onnx|coreml|tflite", help: "Target format (required)."),
            OptionSpec("--out", short: "-o", value: "OUT", help: "Output file (default: MODEL's name with .onnx / .mlmodel / .tflite)."),
            noProvenance,
        ]
    ) { args in
        guard args.positionals.count == 1 else {
            throw CLIError.usage(command: "export", message: "expected one MODEL")
        }
        let path = args.positionals[0]
        guard let format = args.string("--to"), let target = ModelExport.Format(rawValue: format) else {
            throw CLIError.usage(command: "export", message: "--to onnx, --to coreml or --to tflite is required")
        }
        let model = try ModelLoader.load(path)
        let out = args.string("--out") ?? (URL(fileURLWithPath: path).deletingPathExtension().path + target.fileExtension)
        let (bytes, notes) = try { let r = try ModelExport.export(model, name: path, format: target); return (r.bytes, r.notes) }()
        try AtomicFile.write(bytes, to: out, inputs: [path])
        for n in notes { note("mltool: note: \(n)") }
        print("wrote \(out): \(bytes.count) bytes (\(format))")
    }
}
