import Foundation
import MLToolCore
import MLToolEngine
import MLToolFormat
import MLToolImport

/// Loading models of any kind the CLI accepts, recognised by content.
enum ModelLoading {
    /// Reads a native model, or imports an ONNX / Keras / Core ML file on the fly.
    static func load(_ path: String) throws -> Model {
        guard FileManager.default.fileExists(atPath: path) else {
            throw CLIError.missingInput(file: path, reason: "no such file")
        }
        switch try FileKind.detect(path: path) {
        case .mltool: return try ModelFile.read(path: path)
        case .onnx: return try ONNXImporter.importModel(path: path, options: ImportOptions())
        case .hdf5: return try KerasImporter.importModel(path: path, options: ImportOptions())
        case .coreml: return try CoreMLImporter.importModel(path: path)
        case .unknown:
            throw CLIError.badInput(file: path, reason: "not a model: neither an mltool model, ONNX, Keras HDF5 nor Core ML")
        }
    }

    /// The graph of `model`, or an error saying the model has none (text classifiers).
    static func graph(_ model: Model, _ path: String) throws -> Graph {
        guard let g = model.metadata.graph else {
            throw CLIError.badInput(file: path, reason: "this \(model.metadata.task.rawValue) model has no network graph")
        }
        return g
    }
}
