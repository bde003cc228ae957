import Foundation
import MLToolCore
import MLToolData
import MLToolEngine

/// Classifies images with a model (Vision's `VNCoreMLRequest` + `VNClassifyImageRequest`): each image goes through
/// the model's own decoding and preprocessing, then the network; results are probabilities per class. Load once,
/// classify many; `classify(batch:)` decodes on every core and runs the network in batches.
public final class ImageClassifier: @unchecked Sendable {
    public let model: Model
    public let preprocessing: ImagePreprocessing
    public let preprocessor: ImagePreprocessor
    public let inputName: String
    public let outputName: String
    public let labels: [String]
    let engine: Engine
    private let softmax: Bool
    /// Images per engine run in `classify(batch:)` and in evaluation.
    public static let batchSize = 32

    /// `path` names the model in errors. `output` picks another output tensor (its raw values are returned).
    public init(model: Model, path: String = "model", threads: Int = 0, output: String? = nil) throws {
        guard let graph = model.metadata.graph, let input = graph.inputs.first else {
            throw PipelineError.badInput(file: path, reason: "model has no network graph with an input")
        }
        guard let prep = model.metadata.image else {
            throw PipelineError.badInput(file: path, reason: "model records no image preprocessing; re-import it with --input-size and --scale/--bias or --mean/--std")
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

    /// Loads the model at `url` and prepares it.
    public convenience init(contentsOf url: URL, threads: Int = 0) throws {
        try self.init(model: try ModelLoader.load(url.path), path: url.path, threads: threads)
    }

    // MARK: - Classifying

    /// The classes of the image file at `url`, most confident first.
    public func classify(contentsOf url: URL, options: ClassificationOptions = .init()) throws -> [Classification] {
        try classify(image: try ImageDecoder.decode(path: url.path), options: options)
    }

    /// The classes of an encoded image (JPEG or PNG bytes).
    public func classify(data: Data, name: String = "image", options: ClassificationOptions = .init()) throws -> [Classification] {
        try classify(image: try ImageDecoder.decode(bytes: [UInt8](data), name: name), options: options)
    }

    /// The classes of decoded RGB pixels.
    public func classify(image: RGBImage, options: ClassificationOptions = .init()) throws -> [Classification] {
        guard let row = try run([try input(for: image)]).first else { return [] }
        return Classification.ranked(row, labels: labels, options: options)
    }

    /// An image to classify in a batch.
    public enum Source: Sendable {
        case file(URL)
        /// A file named by a path as the user gave it (errors name it the same way).
        case path(String)
        case data(Data, name: String)
        case image(RGBImage)
    }

    /// Classifies many images (like `MLArrayBatchProvider`): decoding and preprocessing run on every core, the
    /// network in batches of `batchSize`. One result per source, in order; a source that cannot be read is a
    /// failure of its own and does not stop the others.
    public func classify(batch sources: [Source], options: ClassificationOptions = .init()) -> [Result<[Classification], Error>] {
        var results = [Result<[Classification], Error>?](repeating: nil, count: sources.count)
        var start = 0
        while start < sources.count {
            let end = min(sources.count, start + Self.batchSize), base = start
            let inputs = Slots<Result<[Float], Error>>(count: end - start)
            DispatchQueue.concurrentPerform(iterations: end - start) { i in
                inputs.set(i, Result {
                    switch sources[base + i] {
                    case .file(let url): return try input(for: try ImageDecoder.decode(path: url.path))
                    case .path(let path): return try input(for: try ImageDecoder.decode(path: path))
                    case .data(let data, let name): return try input(for: try ImageDecoder.decode(bytes: [UInt8](data), name: name))
                    case .image(let image): return try input(for: image)
                    }
                })
            }
            // Every task stores a result, so the values come back one per source, in order.
            var ready = [(Int, [Float])]()
            for (i, r) in inputs.values.enumerated() {
                switch r {
                case .success(let x): ready.append((start + i, x))
                case .failure(let e): results[start + i] = .failure(e)
                }
            }
            do {
                let rows = try run(ready.map(\.1))
                for ((index, _), row) in zip(ready, rows) {
                    results[index] = .success(Classification.ranked(row, labels: labels, options: options))
                }
            } catch {
                for (index, _) in ready { results[index] = .failure(error) }
            }
            start = end
        }
        return results.map { $0 ?? .failure(PipelineError.badInput(file: "batch", reason: "no result")) }
    }

    // MARK: - Lower level

    /// The model input for one image, HWC floats.
    public func input(for image: RGBImage) throws -> [Float] {
        try preprocessor.process(image)
    }

    /// Runs a batch of preprocessed inputs; returns one output row per image (probabilities for classifiers).
    public func run(_ inputs: [[Float]]) throws -> [[Float]] {
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
    public static func top(_ row: [Float], _ k: Int) -> [(Int, Float)] {
        Array(row.enumerated().sorted { $0.element != $1.element ? $0.element > $1.element : $0.offset < $1.offset }
            .prefix(k).map { ($0.offset, $0.element) })
    }
}
