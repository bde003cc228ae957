import Foundation
import MLToolCore

/// Fine-tuning the top of a network with its classifier: a `TrainableGraph` from a cut to the feature vector, and a
/// softmax head on the standardized features, trained together from the activations at the cut (the frozen layers
/// below it never run again: their output is what the feature cache keeps), by AdamW on shuffled mini-batches with a
/// one-cycle schedule. The result is the epoch with the best validation accuracy, the starting point (the frozen top
/// with its fitted head) included, so fine-tuning never returns a model that does worse on the validation split than
/// the one it started from; without validation rows, the last epoch.
public struct FineTuning: Sendable {
    public struct Options: Sendable, Equatable {
        public var epochs = 6
        public var batchSize = 32
        /// AdamW's peak learning rate (one-cycle: up over the first 30 % of the steps, then annealed).
        public var rate = 2e-4
        /// AdamW's decoupled weight decay.
        public var weightDecay = 1e-4
        /// Gradients scaled down to this global norm.
        public var clipNorm: Double? = 5
        public var seed: UInt64 = 42
        public init() {}
    }

    /// The softmax head on standardized features: logits = ((f − mean) · inverseStd) · weights + bias, weights
    /// (width × classes) row-major.
    public struct Head: Sendable, Equatable {
        public var mean: [Float], inverseStd: [Float], weights: [Float], bias: [Float]
        public var width: Int { mean.count }
        public var classes: Int { bias.count }
        public init(mean: [Float], inverseStd: [Float], weights: [Float], bias: [Float]) throws {
            guard inverseStd.count == mean.count, weights.count == mean.count * bias.count, !bias.isEmpty else {
                throw TrainError.shapeMismatch(what: "fine-tuning head", expected: "mean, inverse std (width), weights (width × classes)",
                                               actual: "\(mean.count), \(inverseStd.count), \(weights.count), \(bias.count) classes")
            }
            (self.mean, self.inverseStd, self.weights, self.bias) = (mean, inverseStd, weights, bias)
        }
    }

    /// Activations at the cut, one row of `shape` (height × width × channels) per sample, and each sample's class.
    public struct Rows: Sendable {
        public var values: [Float], labels: [Int], shape: TrainableGraph.Shape
        public var count: Int { labels.count }
        public init(values: [Float], labels: [Int], height: Int, width: Int, channels: Int) throws {
            shape = TrainableGraph.Shape(batch: 1, height: height, width: width, channels: channels)
            guard values.count == labels.count &* shape.count else {
                throw TrainError.shapeMismatch(what: "fine-tuning rows", expected: "\(labels.count) × \(shape.count) values",
                                               actual: "\(values.count)")
            }
            (self.values, self.labels) = (values, labels)
        }
        /// Rows `indices` as one batch.
        func batch(_ indices: ArraySlice<Int>) -> ([Float], [Int], TrainableGraph.Shape) {
            let n = shape.count
            var x = [Float]()
            x.reserveCapacity(indices.count * n)
            for i in indices { x += values[(i * n)..<((i + 1) * n)] }
            var s = shape
            s.batch = indices.count
            return (x, indices.map { labels[$0] }, s)
        }
    }

    /// One epoch: its mean training loss and the validation accuracy after it.
    public struct Epoch: Sendable, Equatable {
        public var trainLoss: Double, validationAccuracy: Double?, seconds: Double
    }

    public var top: TrainableGraph
    public var head: Head
    /// Every epoch, in order; `keptEpoch` is the one returned (0: the starting point, 1...: after that epoch).
    public var epochs: [Epoch] = []
    public var keptEpoch = 0
    /// The validation accuracy of the starting point.
    public var startingValidationAccuracy: Double?

    public init(top: TrainableGraph, head: Head) { (self.top, self.head) = (top, head) }

    /// Trains `top` and `head` on `train`, choosing the epoch on `validation` (nil: the last). `progress` hears of
    /// each epoch; `check` is called between batches (throws to stop: cancellation).
    public static func train(top: TrainableGraph, head: Head, train: Rows, validation: Rows?, options: Options,
                             progress: (Epoch) -> Void = { _ in }, check: () throws -> Void = {}) throws -> FineTuning {
        guard train.count > 0, options.epochs > 0, options.batchSize > 0 else {
            throw TrainError.shapeMismatch(what: "fine-tuning", expected: "rows, epochs and a batch size > 0",
                                           actual: "\(train.count) rows, \(options.epochs) epochs, batch \(options.batchSize)")
        }
        var result = FineTuning(top: top, head: head)
        var parameters = top.parameters + [head.weights, head.bias]
        var optimizer = Optimizer(.adamW(beta1: 0.9, beta2: 0.999, epsilon: 1e-8), weightDecay: options.weightDecay,
                                  clipNorm: options.clipNorm)
        let stepsPerEpoch = (train.count + options.batchSize - 1) / options.batchSize
        let total = stepsPerEpoch * options.epochs
        var best = try validation.map { try result.accuracy(on: $0) }
        result.startingValidationAccuracy = best
        var kept = (top: top, head: head)
        var rng = SplitMix64(seed: options.seed)
        for epoch in 1...options.epochs {
            let started = Date()
            var order = Array(0..<train.count)
            order.seededShuffle(&rng)
            var lossSum = 0.0
            for s in 0..<stepsPerEpoch {
                try check()
                let indices = order[(s * options.batchSize)..<min(train.count, (s + 1) * options.batchSize)]
                let (x, labels, shape) = train.batch(indices)
                let (loss, gradients) = try result.gradients(x, shape: shape, labels: labels)
                lossSum += loss * Double(labels.count)
                let rate = LearningRateSchedule.oneCycle.rate(step: (epoch - 1) * stepsPerEpoch + s, total: total, peak: options.rate)
                try optimizer.step(&parameters, gradients: gradients, rate: rate)
                result.top.parameters = Array(parameters.dropLast(2))
                (result.head.weights, result.head.bias) = (parameters[parameters.count - 2], parameters[parameters.count - 1])
            }
            let accuracy = try validation.map { try result.accuracy(on: $0) }
            let record = Epoch(trainLoss: lossSum / Double(train.count), validationAccuracy: accuracy,
                               seconds: Date().timeIntervalSince(started))
            result.epochs.append(record)
            progress(record)
            if let a = accuracy, let b = best {
                if a > b { (best, kept, result.keptEpoch) = (a, (result.top, result.head), epoch) }
            } else {
                (kept, result.keptEpoch) = ((result.top, result.head), epoch)
            }
        }
        (result.top, result.head) = kept
        return result
    }

    /// The mean loss of a batch and the gradient of every parameter (the top's, then the head's weights and bias).
    func gradients(_ x: [Float], shape: TrainableGraph.Shape, labels: [Int]) throws -> (Double, [[Float]]) {
        let trace = try top.forward(x, shape: shape)
        let (z, logits) = try standardizedAndLogits(trace.output, rows: shape.batch)
        let (loss, g) = try SoftmaxCrossEntropy.lossAndGradient(logits: logits, labels: labels, classes: head.classes)
        let (w, k) = (head.width, head.classes)
        var dWeights = [Float](repeating: 0, count: w * k), dBias = [Float](repeating: 0, count: k)
        var dFeatures = [Float](repeating: 0, count: shape.batch * w)
        for b in 0..<shape.batch {
            for c in 0..<k { dBias[c] += g[b * k + c] }
            for i in 0..<w {
                let zi = z[b * w + i]
                var dz: Float = 0
                for c in 0..<k {
                    dWeights[i * k + c] += zi * g[b * k + c]
                    dz += g[b * k + c] * head.weights[i * k + c]
                }
                dFeatures[b * w + i] = dz * head.inverseStd[i]
            }
        }
        let back = try top.backward(trace, outputGradient: dFeatures)
        return (loss, back.parameters + [dWeights, dBias])
    }

    /// The standardized features and the logits of `rows` feature vectors.
    func standardizedAndLogits(_ features: [Float], rows: Int) throws -> (z: [Float], logits: [Float]) {
        let (w, k) = (head.width, head.classes)
        guard features.count == rows * w else {
            throw TrainError.shapeMismatch(what: "fine-tuning features", expected: "\(rows) × \(w)", actual: "\(features.count)")
        }
        var z = features, logits = [Float](repeating: 0, count: rows * k)
        for b in 0..<rows {
            for c in 0..<k { logits[b * k + c] = head.bias[c] }
            for i in 0..<w {
                let zi = (features[b * w + i] - head.mean[i]) * head.inverseStd[i]
                z[b * w + i] = zi
                for c in 0..<k { logits[b * k + c] += zi * head.weights[i * k + c] }
            }
        }
        return (z, logits)
    }

    /// The feature vectors of `rows` through the top, 64 rows at a time.
    public func features(_ rows: Rows) throws -> [Float] { try Self.features(rows, through: top) }

    /// The feature vectors of `rows` through `top`, 64 rows at a time.
    public static func features(_ rows: Rows, through top: TrainableGraph) throws -> [Float] {
        var out = [Float]()
        for start in stride(from: 0, to: rows.count, by: 64) {
            let (x, _, shape) = rows.batch(Array(start..<min(rows.count, start + 64))[...])
            out += try top.forward(x, shape: shape).output
        }
        return out
    }

    /// The logits of `rows` (rows × classes).
    public func logits(_ rows: Rows) throws -> [Float] {
        try standardizedAndLogits(try features(rows), rows: rows.count).logits
    }

    /// The share of `rows` whose highest logit is their class.
    public func accuracy(on rows: Rows) throws -> Double {
        guard rows.count > 0 else { return 0 }
        let l = try logits(rows), k = head.classes
        var correct = 0
        for r in 0..<rows.count {
            let row = l[(r * k)..<((r + 1) * k)]
            if let m = row.indices.max(by: { row[$0] < row[$1] }), m - r * k == rows.labels[r] { correct += 1 }
        }
        return Double(correct) / Double(rows.count)
    }
}
