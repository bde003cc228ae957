import Foundation
import MLToolCore
import MLToolEngine
import MLToolExport
import MLToolFormat
import MLToolImport

/// Networks from other frameworks in, models for other runtimes out.
public enum ModelImport {
    /// Imports an ONNX, Keras HDF5, Core ML or TensorFlow Lite file (recognised by content) with `options` recorded in the model.
    /// A Core ML model records its own preprocessing and labels, so `options` must be empty for one.
    public static func importModel(path: String, options: ImportOptions = ImportOptions()) throws -> Model {
        switch try FileKind.detect(path: path) {
        case .onnx: return try ONNXImporter.importModel(path: path, options: options)
        case .hdf5: return try KerasImporter.importModel(path: path, options: options)
        case .tflite: return try TFLiteImporter.importModel(path: path, options: options)
        case .mltool: throw PipelineError.badInput(file: path, reason: "already an mltool model")
        case .coreml:
            guard options.image == nil, options.labels.isEmpty, options.featureTensor == nil else {
                throw PipelineError.invalidParameter(name: "options", reason: "a Core ML model records its own preprocessing and labels; drop the preprocessing, --labels and --feature-tensor options")
            }
            return try CoreMLImporter.importModel(path: path)
        case .unknown: throw PipelineError.badInput(file: path, reason: "neither ONNX, Keras HDF5, Core ML nor TensorFlow Lite (recognised by content; \(FileKind.unrecognisedPlace(path: path)))")
        }
    }

    /// The architectures `mltool import … --architecture` builds from a weights-only file (safetensors).
    public static let architectures = ["bert-encoder"]

    /// Whether `path` names a sentence encoder's files (`importEncoder`) rather than one network: `architecture` or
    /// `tokenizer` given, a .safetensors file, or a folder holding model.safetensors. Any other folder — a Core ML
    /// .mlpackage first of all — is `importModel`'s.
    public static func isEncoderSource(path: String, architecture: String?, tokenizer: String?) -> Bool {
        if architecture != nil || tokenizer != nil || path.hasSuffix(".safetensors") { return true }
        var isFolder: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) && isFolder.boolValue
            && FileManager.default.fileExists(atPath: (path as NSString).appendingPathComponent("model.safetensors"))
    }

    /// Imports a sentence encoder from Hugging Face's files (`BERTImporter`): `path` is a folder holding
    /// model.safetensors, config.json and tokenizer.json, or the safetensors file itself with `architecture`
    /// "bert-encoder" and the tokenizer.json given (config.json is read from beside it).
    public static func importEncoder(path: String, architecture: String?, tokenizer: String?) throws -> Model {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else {
            throw PipelineError.missingInput(file: path, reason: "no such file or folder")
        }
        if let architecture, !architectures.contains(architecture) {
            throw PipelineError.invalidParameter(name: "--architecture", reason: "--architecture: '\(architecture)', expected \(architectures.joined(separator: " or "))")
        }
        let folder = isFolder.boolValue ? path : (path as NSString).deletingLastPathComponent
        let weights = isFolder.boolValue ? (folder as NSString).appendingPathComponent("model.safetensors") : path
        let config = ((folder.isEmpty ? "." : folder) as NSString).appendingPathComponent("config.json")
        let tokens = tokenizer ?? ((folder.isEmpty ? "." : folder) as NSString).appendingPathComponent("tokenizer.json")
        if !isFolder.boolValue && architecture == nil {
            throw PipelineError.invalidParameter(name: "--architecture", reason: "a safetensors file holds weights only: say what they are with --architecture bert-encoder")
        }
        for needed in [weights, config, tokens] where !FileManager.default.fileExists(atPath: needed) {
            throw PipelineError.missingInput(file: needed, reason: "no such file (a BERT encoder needs model.safetensors, config.json and tokenizer.json)")
        }
        return try BERTImporter.importModel(safetensors: weights, config: config, tokenizer: tokens)
    }

    /// Class names from a labels file: UTF-8 text, one name per line in output order, surrounding spaces trimmed,
    /// trailing empty lines dropped (`ImportOptions.labels`).
    public static func labels(file: String) throws -> [String] {
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
            throw PipelineError.missingInput(file: file, reason: "cannot read the labels file (UTF-8 text expected)")
        }
        var labels = text.split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        while labels.last == "" { labels.removeLast() }
        return labels
    }
}

/// Writing models for other runtimes.
public enum ModelExport {
    public enum Format: String, Sendable, CaseIterable {
        /// One ONNX graph (opset 13) for ONNX Runtime; a detector's ends in its decoder and NonMaxSuppression.
        case onnx
        /// A Core ML NeuralNetworkClassifier (specification version 5); for a detector a pipeline of the network and
        /// decoder, then a NonMaximumSuppression model.
        case coreml
        /// A TensorFlow Lite flatbuffer (schema version 3) for LiteRT's interpreter: float32 NHWC in and out.
        case tflite

        /// The file extension of the format.
        public var fileExtension: String {
            switch self {
            case .onnx: return ".onnx"
            case .coreml: return ".mlmodel"
            case .tflite: return ".tflite"
            }
        }
    }

    /// The bytes of `model` in `format`, with notes on what could not be carried over exactly. `name` names the
    /// model in errors.
    public static func export(_ model: Model, name: String, format: Format) throws -> ExportResult {
        // A sound classifier's graph starts at the mel windows and ends per window: an export would leave out the
        // front end and the mean over windows, and none has been checked against onnxruntime or LiteRT yet.
        if model.metadata.task == .soundClassifier {
            throw PipelineError.notSupported("\(name): exporting a sound classifier (task \(SoundClassificationTask.name)) to \(format.rawValue)")
        }
        switch format {
        case .onnx: return try ONNXExporter.export(model, name: name, headShapes: try headShapes(model))
        case .coreml: return try CoreMLExporter.export(model, name: name, headShapes: try headShapes(model), boxes: try boxesTrace(model, name: name))
        case .tflite:
            // A model without a graph (a tree ensemble) gets the exporter's refusal, not the shape pass's.
            return try TFLiteExporter.export(model, name: name, shapes: model.metadata.graph == nil ? [:] : try tensorShapes(model))
        }
    }

    /// The shape of every tensor the graph computes for one image at the model's input size (the image size of its
    /// preprocessing where the input's height and width are free), by the engine's shape inference: nothing runs.
    public static func tensorShapes(_ model: Model) throws -> [String: [Int]] {
        guard var graph = model.metadata.graph else { throw EngineError.noGraph }
        if let image = model.metadata.image {
            for i in graph.inputs.indices where graph.inputs[i].shape.count == 4 {
                graph.inputs[i].shape[1] = image.height
                graph.inputs[i].shape[2] = image.width
            }
        }
        var seen = Set(graph.inputs.map(\.name))
        graph.outputs = graph.nodes.flatMap(\.outputs).filter { seen.insert($0).inserted }
        var md = model.metadata
        md.graph = graph
        var shapes = try Engine.outputShapes(model: Model(metadata: md, tensors: model.tensors), batch: 1)
        for input in graph.inputs { shapes[input.name] = input.shape.enumerated().map { $0.element == -1 ? 1 : $0.element } }
        return shapes
    }

    /// Where a "boxes" decoder's values come from (`BoxesTrace`): the feature maps before the shape-only nodes that
    /// lay them out, their shapes from one run of the network on a blank input, and the decoder tensors' sources from
    /// one run of those nodes alone on index values (map m's element i holds offset(m) + i, exact in float32 below
    /// 2^24). nil for other models, and when the values do not come from maps (the exporter says why).
    static func boxesTrace(_ model: Model, name: String) throws -> BoxesTrace? {
        guard let d = model.metadata.detection, d.decoder == "boxes", let graph = model.metadata.graph else { return nil }
        let cut = BoxesTrace.cut(graph, constants: Set(model.tensors.map(\.name)), from: d.tensors)
        let found = try runOnBlank(model, outputs: cut.maps)
        let maps = cut.maps.map { BoxesTrace.Map(name: $0, shape: found[$0]?.shape ?? []) }
        guard maps.allSatisfy({ $0.shape.count == 4 && $0.shape[0] == 1 }) else { return BoxesTrace(maps: maps, sources: [:]) }
        var values: [String: Tensor] = [:], offset = 0
        for m in maps {
            let n = m.shape.reduce(1, *)
            guard offset + n <= 1 << 24 else {
                throw ExportError.unsupported(model: name, format: "Core ML", place: "detection.boxes '\(d.boxes?.tensor ?? "")'",
                                              reason: "its feature maps hold more than 2^24 values")
            }
            values[m.name] = Tensor(shape: m.shape, data: (offset..<(offset + n)).map(Float.init))
            offset += n
        }
        // The shape-only nodes alone, the maps as their inputs.
        var md = model.metadata
        md.graph = Graph(inputs: maps.map { GraphInput(name: $0.name, shape: $0.shape) }, outputs: d.tensors, nodes: cut.nodes)
        let layout = try Engine(model: Model(metadata: md, tensors: []), threads: 1, mode: .reference)
        let sources = try layout.run(values).mapValues { BoxesTrace.Source(shape: $0.shape, index: $0.data.map { Int(exactly: $0) ?? -1 }) }
        return BoxesTrace(maps: maps, sources: sources)
    }

    /// The shape of each grid head of a detector (the exporters lay the cell grid out as constants): one run of the
    /// network on a blank input. Empty for other models and for "boxes" decoders.
    static func headShapes(_ model: Model) throws -> [String: [Int]] {
        guard let d = model.metadata.detection, let heads = d.heads, !heads.isEmpty else { return [:] }
        return try runOnBlank(model, outputs: heads.map(\.tensor)).mapValues(\.shape)
    }

    /// `outputs` of one run of the network (one thread) on a blank input of batch 1 at the model's image size.
    private static func runOnBlank(_ model: Model, outputs: [String]) throws -> [String: Tensor] {
        let engine = try Engine(model: model, threads: 1)
        guard let input = engine.inputNames.first, var shape = engine.inputShape(input, batch: 1) else { throw EngineError.noGraph }
        if let image = model.metadata.image, shape.count == 4 { shape[1] = image.height; shape[2] = image.width }
        let x = Tensor(shape: shape, data: [Float](repeating: 0, count: try Checked.elementCount(shape, what: "input '\(input)'")))
        return try engine.run([input: x], outputs: outputs)
    }
}
