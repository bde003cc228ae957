import Foundation
import MLToolCore
import MLToolData
import MLToolEngine

/// Runs an image model on files: decode → the model's own preprocessing → engine → probabilities.
final class ImageClassifier {
    let model: Model
    let engine: Engine
    let preprocessing: ImagePreprocessing
    let preprocessor: ImagePreprocessor
    let inputName: String
    let outputName: String
    let labels: [String]
    private let softmax: Bool

    init(model: Model, path: String, threads: Int = 0, output: String? = nil) throws {
        guard let graph = model.metadata.graph, let input = graph.inputs.first else {
            throw CLIError.badInput(file: path, reason: "model has no network graph with an input")
        }
        guard let prep = model.metadata.image else {
            throw CLIError.badInput(file: path, reason: "model records no image preprocessing; re-import it with --input-size and --scale/--bias or --mean/--std")
        }
        self.model = model
        self.engine = try Engine(model: model, threads: threads)
        self.preprocessing = prep
        self.preprocessor = try ImagePreprocessor(prep)
        self.inputName = input.name
        self.outputName = output ?? graph.outputs.first ?? ""
        self.labels = model.metadata.labels
        self.softmax = output == nil && model.metadata.outputKind != "probabilities"
    }

    /// The model input for one image, HWC floats.
    func input(for image: RGBImage) throws -> [Float] {
        try preprocessor.process(image)
    }

    /// Runs a batch of preprocessed inputs; returns one output row per image (probabilities for classifiers).
    func run(_ inputs: [[Float]]) throws -> [[Float]] {
        let rows = try engine.rows(inputs, input: inputName, height: preprocessing.height, width: preprocessing.width,
                                   channels: preprocessor.channels, output: outputName)
        return softmax ? rows.map(ImageClassifier.softmax) : rows
    }

    static func softmax(_ x: [Float]) -> [Float] {
        let m = x.max() ?? 0
        let e = x.map { Foundation.exp($0 - m) }
        let s = e.reduce(0, +)
        return e.map { $0 / s }
    }

    /// The top `k` (index, probability) pairs of `row`, best first (lower index first on ties).
    static func top(_ row: [Float], _ k: Int) -> [(Int, Float)] {
        Array(row.enumerated().sorted { $0.element != $1.element ? $0.element > $1.element : $0.offset < $1.offset }
            .prefix(k).map { ($0.offset, $0.element) })
    }
}
