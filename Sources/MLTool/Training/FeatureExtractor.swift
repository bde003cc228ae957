import Foundation
import MLToolCore
import MLToolData
import MLToolEngine
import MLToolFormat

/// A frozen feature extractor: an imported network run up to its feature tensor. Training caches what it computes
/// by content (`FeatureCache`); the extractor's SHA-256 is part of every key.
public final class FeatureExtractor: @unchecked Sendable {
    public let path: String
    public let model: Model
    public let featureTensor: String
    public let preprocessing: ImagePreprocessing
    public let preprocessor: ImagePreprocessor
    /// SHA-256 of the extractor file: part of every cache key.
    public let digest: String
    private let threads: Int
    private var engineStorage: Engine?
    private let lock = NSLock()

    /// The file name of the default extractor (EfficientNet-Lite0, built by `make models`).
    public static let defaultFileName = BundledModel.extractor.fileName

    /// Where the default extractor is looked for, in order (`BundledModel.candidates`): `explicit` alone when
    /// given; else $MLTOOL_EXTRACTOR, ./models/, beside the binary, ../share/mltool/ (after `make install`), and a
    /// source tree's models/.
    public static func candidates(explicit: String?) -> [String] { BundledModel.extractor.candidates(explicit: explicit) }

    /// The extractor at `explicit`, or the first default candidate that exists; `featureLayer` overrides the
    /// tensor the model names as its features.
    public init(explicit: String?, featureLayer: String?, threads: Int) throws {
        let list = Self.candidates(explicit: explicit)
        guard let found = list.first(where: { FileManager.default.fileExists(atPath: $0) }) else {
            if let e = explicit { throw PipelineError.missingInput(file: e, reason: "no such extractor model") }
            throw PipelineError.missingInput(
                file: "models/" + Self.defaultFileName,
                reason: "no feature extractor found (looked in: \(list.joined(separator: ", "))).\n"
                    + "Build the default one with `make models` in the mltool source tree, or pass --extractor MODEL "
                    + "(any model imported with `mltool import ... --feature-tensor NAME`), or set MLTOOL_EXTRACTOR.")
        }
        // Absolute, so the provenance (and so the model's bytes) does not depend on the folder it was trained from.
        path = URL(fileURLWithPath: found).standardized.path
        model = try ModelLoader.load(found)
        guard let prep = model.metadata.image else {
            throw PipelineError.badInput(file: found, reason: "the extractor records no image preprocessing; re-import it with --input-size and --scale/--bias or --mean/--std")
        }
        guard let feature = featureLayer ?? model.metadata.featureTensor else {
            throw PipelineError.invalidParameter(name: "featureLayer", reason: "\(found) names no feature tensor; pass --feature-layer NAME")
        }
        guard model.metadata.graph?.nodes.contains(where: { $0.outputs.contains(feature) }) == true else {
            throw PipelineError.badInput(file: found, reason: "feature tensor '\(feature)' is not produced by the extractor's graph")
        }
        featureTensor = feature
        preprocessing = prep
        preprocessor = try ImagePreprocessor(prep)
        digest = try SHA256.hex(fileAt: found)
        self.threads = threads
    }

    /// The engine, built on first use (a warm cache never needs it).
    func engine() throws -> Engine {
        lock.lock()
        defer { lock.unlock() }
        if let e = engineStorage { return e }
        let e = try Engine(model: model, threads: threads)
        engineStorage = e
        return e
    }

    /// Features of preprocessed inputs (each HWC), one row per input.
    public func features(_ inputs: [[Float]]) throws -> [[Float]] {
        guard !inputs.isEmpty else { return [] }
        return try engine().rows(inputs, input: model.metadata.graph?.inputs.first?.name ?? "input",
                                 height: preprocessing.height, width: preprocessing.width,
                                 channels: preprocessor.channels, output: featureTensor)
    }

    /// The graph of this extractor cut after the feature tensor, with only the tensors it uses.
    public func truncated() throws -> (nodes: [Node], tensors: [StoredTensor], graph: Graph) {
        guard let graph = model.metadata.graph else {
            throw PipelineError.badInput(file: path, reason: "the extractor has no network graph")
        }
        let (kept, needed) = GraphPasses.nodes(graph.nodes, feeding: [featureTensor])
        return (kept, model.tensors.filter { needed.contains($0.name) }, graph)
    }
}
