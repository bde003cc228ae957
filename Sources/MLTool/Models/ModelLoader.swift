import Foundation
import MLToolCore
import MLToolFormat
import MLToolImport

/// Loading models of every kind mltool reads, recognised by content: its own files, ONNX, Keras HDF5, Core ML, TensorFlow Lite.
public enum ModelLoader {
    /// Reads a native model, or imports an ONNX / Keras / Core ML / TFLite file on the fly (with no import options).
    public static func load(_ path: String) throws -> Model {
        guard FileManager.default.fileExists(atPath: path) else {
            throw PipelineError.missingInput(file: path, reason: "no such file")
        }
        switch try FileKind.detect(path: path) {
        case .mltool: return try ModelFile.read(path: path)
        case .onnx: return try ONNXImporter.importModel(path: path, options: ImportOptions())
        case .hdf5: return try KerasImporter.importModel(path: path, options: ImportOptions())
        case .coreml: return try CoreMLImporter.importModel(path: path)
        case .tflite: return try TFLiteImporter.importModel(path: path, options: ImportOptions())
        case .unknown:
            throw PipelineError.badInput(file: path, reason: "not a model: neither an mltool model, ONNX, Keras HDF5, Core ML nor TensorFlow Lite (\(FileKind.unrecognisedPlace(path: path)))")
        }
    }

    /// The graph of `model`, or an error saying the model has none (text classifiers).
    public static func graph(_ model: Model, _ path: String) throws -> Graph {
        guard let g = model.metadata.graph else {
            throw PipelineError.badInput(file: path, reason: "this \(model.metadata.task.rawValue) model has no network graph")
        }
        return g
    }
}

extension Model {
    /// Loads the model at `url` (any kind `ModelLoader` reads).
    public init(contentsOf url: URL) throws {
        self = try ModelLoader.load(url.path)
    }
}
