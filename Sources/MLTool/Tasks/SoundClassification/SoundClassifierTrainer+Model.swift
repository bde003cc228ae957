import Foundation
import MLToolCore
import MLToolData

extension SoundClassifierTrainer {
    /// The model (docs/FORMAT.md section 4.7): the embedding's graph, its output flattened to (windows, 96), then
    /// standardisation, the dense head and softmax → `probabilities`; the windowing in `sound`; the holdout recorded.
    func assemble(_ features: SoundFeatures, head: Head, labels: [String], windowing: SoundClassifierParameters.Windowing,
                  metrics: [String: Double], holdout: [ImageItem], source: String,
                  counts: (train: Int, validation: Int)) throws -> Model {
        guard let g = features.model.metadata.graph, let embedding = g.outputs.first else {
            throw PipelineError.badInput(file: features.path, reason: "the speech embedding has no graph output")
        }
        let width = head.standardizer.mean.count, k = labels.count
        let headNodes = [
            Node(name: "head.flatten", op: .flatten, inputs: [embedding], outputs: ["head.features"], attributes: Attributes(axis: 1)),
            Node(name: "head.center", op: .sub, inputs: ["head.features", "head.mean"], outputs: ["head.centered"]),
            Node(name: "head.scale", op: .mul, inputs: ["head.centered", "head.inverseStd"], outputs: ["head.standardized"]),
            Node(name: "head", op: .dense, inputs: ["head.standardized", "head.weights", "head.bias"], outputs: ["logits"]),
            Node(name: "head.softmax", op: .softmax, inputs: ["logits"], outputs: ["probabilities"], attributes: Attributes(axis: -1)),
        ]
        var md = ModelMetadata(task: .soundClassifier,
                               graph: Graph(inputs: g.inputs, outputs: ["probabilities"], nodes: g.nodes + headNodes,
                                            sourceLayout: g.sourceLayout),
                               labels: labels)
        md.name = parameters.name
        md.outputKind = "probabilities"
        md.featureTensor = embedding
        md.sound = SoundConfig(minimumSamples: windowing.minimumSamples, overlap: windowing.overlap)
        md.metrics = metrics
        md.provenance = Provenance(sources: [Provenance.Source(path: features.path, sha256: features.sha256)],
                                   seed: parameters.seed, command: command())
        let root = (URL(fileURLWithPath: source).path as NSString).standardizingPath
        md.split = SplitManifest(
            root: root,
            holdout: try holdout.map { SplitManifest.Item(path: SplitManifest.relative($0.path, to: root), label: $0.label,
                                                          sha256: try SHA256.hex(fileAt: $0.path)) },
            trainCount: counts.train, validationCount: counts.validation, seed: parameters.seed)
        return Model(metadata: md, tensors: features.model.tensors + [
            StoredTensor(name: "head.mean", tensor: Tensor(shape: [width], data: head.standardizer.mean)),
            StoredTensor(name: "head.inverseStd", tensor: Tensor(shape: [width], data: head.standardizer.std.map { 1 / $0 })),
            StoredTensor(name: "head.weights", tensor: Tensor(shape: [width, k], data: head.model.weights)),
            StoredTensor(name: "head.bias", tensor: Tensor(shape: [k], data: head.model.bias)),
        ])
    }
}
