import Foundation
import MLToolCore
import MLToolEngine
import MLToolTrain

extension ImageClassifierTrainer {
    /// What fine-tuning works with: the extractor run up to the cut (what the feature cache keeps for each image),
    /// the trainable top from the cut to the features, where its parameters live in the extractor, and the shape of
    /// the activations at the cut.
    struct FineTunePlan {
        var extractor: FeatureExtractor
        var top: TrainableGraph
        var parameterNames: [String]
        var shape: TrainableGraph.Shape
    }

    /// The fine-tuning plan `parameters.fineTune` asks for (nil for 0), or an error for a negative count: what
    /// training and its feature-only shards both cut the extractor at.
    func fineTuning(_ extractor: FeatureExtractor) throws -> FineTunePlan? {
        guard parameters.fineTune >= 0 else {
            throw PipelineError.invalidParameter(name: "fineTune", reason: "--fine-tune must be 0 or more (layers)")
        }
        return parameters.fineTune > 0
            ? try Self.fineTunePlan(extractor, layers: parameters.fineTune, threads: parameters.threads) : nil
    }

    /// The plan for training the last `layers` convolutions of `base` (`TrainableGraph.cut`).
    static func fineTunePlan(_ base: FeatureExtractor, layers: Int, threads: Int) throws -> FineTunePlan {
        let cut = try TrainableGraph.cut(in: base.model, before: base.featureTensor, convolutions: layers)
        let (top, names) = try TrainableGraph.top(of: base.model, from: cut, to: base.featureTensor)
        var probe = base.model
        probe.metadata.graph?.outputs = [cut]
        guard let s = try Engine.outputShapes(model: probe)[cut], s.count == 4, s.dropFirst().allSatisfy({ $0 > 0 }) else {
            throw PipelineError.badInput(file: base.path, reason: "the fine-tuning cut '\(cut)' is not an (N, H, W, C) map")
        }
        let extractor = try FeatureExtractor(explicit: base.path, featureLayer: cut, threads: threads)
        return FineTunePlan(extractor: extractor, top: top, parameterNames: names,
                            shape: TrainableGraph.Shape(batch: 1, height: s[1], width: s[2], channels: s[3]))
    }

    /// The activations at the cut of `items` as fine-tuning rows; each item's features become the top's feature
    /// vector (what the head is first fitted on).
    func pooled(_ items: inout [Featured], _ plan: FineTunePlan, labels: [String]) throws -> FineTuning.Rows {
        let index = Dictionary(labels.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
        var values = [Float]()
        values.reserveCapacity(items.count * plan.shape.count)
        for i in items.indices {
            values += items[i].features
            items[i].features = []
        }
        let s = plan.shape
        let rows = try FineTuning.Rows(values: values, labels: items.map { index[$0.item.label] ?? 0 },
                                       height: s.height, width: s.width, channels: s.channels)
        let features = try FineTuning.features(rows, through: plan.top)
        let width = features.count / max(items.count, 1)
        for i in items.indices { items[i].features = Array(features[(i * width)..<((i + 1) * width)]) }
        return rows
    }

    /// Fine-tunes the top with the fitted head; the metrics are measured again on the tuned network.
    func fineTune(_ plan: FineTunePlan, fit: HeadFit, train: FineTuning.Rows, validation: FineTuning.Rows,
                  holdout: FineTuning.Rows, emit: (PipelineEvent) -> Void, cancellation: Cancellation) throws
        -> (tuned: FineTuning, metrics: [String: Double]) {
        let head = try FineTuning.Head(mean: fit.standardizer.mean, inverseStd: fit.standardizer.std.map { 1 / $0 },
                                       weights: fit.head.weights, bias: fit.head.bias)
        var options = parameters.fineTuning
        options.seed = parameters.seed
        let started = Date()
        let tuned = try FineTuning.train(
            top: plan.top, head: head, train: train, validation: validation.count > 0 ? validation : nil, options: options,
            progress: { e in
                emit(.progress(label: "fine-tuning", advanced: 1, total: options.epochs))
                emit(.status(String(format: "fine-tuning: loss %.4f", e.trainLoss)
                    + (e.validationAccuracy.map { String(format: ", validation accuracy %.4f", $0) } ?? "")
                    + String(format: " (%.1f s)", e.seconds)))
            }, check: { try cancellation.check() })
        emit(.progressFinished(label: "fine-tuning"))
        emit(.phase("fine-tuning", seconds: Date().timeIntervalSince(started)))
        var metrics = fit.metrics
        metrics["train.accuracy"] = try tuned.accuracy(on: train)
        metrics["validation.accuracy"] = validation.count > 0 ? try tuned.accuracy(on: validation) : nil
        metrics["holdout.accuracy"] = holdout.count > 0 ? try tuned.accuracy(on: holdout) : nil
        metrics["fineTune.layers"] = Double(parameters.fineTune)
        metrics["fineTune.keptEpoch"] = Double(tuned.keptEpoch)
        metrics["fineTune.startValidationAccuracy"] = tuned.startingValidationAccuracy
        return (tuned, metrics)
    }

    /// The extractor's nodes and tensors with the tuned top's parameters in place of the ones it started from (a
    /// bias the model did not store becomes a tensor of its own, read by its node).
    static func writeBack(_ tuned: TrainableGraph, names: [String], nodes: inout [Node], tensors: [StoredTensor]) throws
        -> [StoredTensor] {
        var byName = Dictionary(tensors.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { a, _ in a })
        var out = tensors
        for (name, values) in zip(names, tuned.parameters) {
            if let i = byName[name] {
                out[i] = StoredTensor(name: name, tensor: Tensor(shape: out[i].shape, data: values))
                continue
            }
            // "<node>.bias (added)": the node had no bias input.
            let node = String(name.dropLast(" (added)".count).dropLast(".bias".count))
            guard name.hasSuffix(".bias (added)"), let n = nodes.firstIndex(where: { $0.name == node }), nodes[n].inputs.count == 2 else {
                throw PipelineError.badInput(file: name, reason: "fine-tuned parameter without a tensor in the extractor")
            }
            let tensorName = node + ".bias"
            nodes[n].inputs.append(tensorName)
            out.append(StoredTensor(name: tensorName, tensor: Tensor(shape: [values.count], data: values)))
            byName[tensorName] = out.count - 1
        }
        return out
    }
}
