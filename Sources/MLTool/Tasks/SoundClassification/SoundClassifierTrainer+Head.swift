import Foundation
import MLToolAudio
import MLToolCore
import MLToolTrain

extension SoundClassifierTrainer {
    /// Recordings with their label index and embeddings (windows × 96).
    struct Clips {
        var embeddings: [SoundEmbedding] = []
        var labels: [Int] = []

        /// One row per window, each with its recording's label.
        var rows: (x: [Float], labels: [Int], count: Int) {
            var x = [Float](), y = [Int]()
            for (e, label) in zip(embeddings, labels) {
                x += e.features
                y += Array(repeating: label, count: e.features.count / SpeechEmbedding.dimensions)
            }
            return (x, y, y.count)
        }

        static func + (a: Clips, b: Clips) -> Clips {
            Clips(embeddings: a.embeddings + b.embeddings, labels: a.labels + b.labels)
        }
    }

    /// How a windowing does on the validation recordings.
    struct Score {
        var accuracy: Double
        var logLoss: Double

        /// Higher accuracy, ties broken by lower log-loss (as `LogisticRegressionOptions.Selection.accuracy`). Not
        /// log-loss first: the mean over padded windows, many of them mostly silence, is less peaked the more
        /// windows there are, so log-loss favours one window per recording even where it loses accuracy (FSDD
        /// validation recordings, official split: 1.5 s padding 0.9857 / 0.357, one window 0.9643 / 0.080).
        func isBetter(than other: Score) -> Bool {
            accuracy != other.accuracy ? accuracy > other.accuracy : logLoss < other.logLoss
        }
    }

    /// A head fitted on standardised window rows.
    struct Head {
        var standardizer: Standardizer
        var model: LogisticRegressionModel

        /// Each recording's probabilities: the mean of its windows' (recordings × classes, row-major).
        func clipProbabilities(_ clips: Clips) throws -> [[Float]] {
            let d = SpeechEmbedding.dimensions, k = model.classes
            return try clips.embeddings.map { e in
                let n = e.features.count / d
                let p = try model.probabilities(try standardizer.applied(e.features, rows: n), rows: n)
                return (0..<k).map { c in (0..<n).reduce(Float(0)) { $0 + p[$1 * k + c] } / Float(max(n, 1)) }
            }
        }

        /// Accuracy and mean log-loss over recordings (nil for none).
        func score(_ clips: Clips) throws -> Score? {
            guard !clips.labels.isEmpty else { return nil }
            var right = 0, loss = 0.0
            for (p, y) in zip(try clipProbabilities(clips), clips.labels) {
                if p.indices.max(by: { p[$0] < p[$1] }) == y { right += 1 }
                loss -= log(max(Double(p[y]), 1e-15))
            }
            return Score(accuracy: Double(right) / Double(clips.labels.count), logLoss: loss / Double(clips.labels.count))
        }
    }

    /// The head's options (`parameters`' L2, grid and iterations).
    var headOptions: LogisticRegressionOptions {
        var o = LogisticRegressionOptions()
        o.l2 = parameters.l2
        o.l2Grid = parameters.l2Grid
        o.maxIterations = parameters.maxIterations
        return o
    }

    /// Standardises on `train`'s windows and fits the head, the L2 ranked on `validation`'s windows when there are
    /// any.
    func fitHead(train: Clips, validation: Clips, classes: Int, options: LogisticRegressionOptions,
                 emit: @escaping (PipelineEvent) -> Void) throws -> Head {
        let d = SpeechEmbedding.dimensions
        var (x, y, n) = train.rows
        let s = try Standardizer.fit(x: x, rows: n, cols: d)
        try s.apply(&x, rows: n)
        var v: (x: [Float], rows: Int, labels: [Int])?
        if !validation.labels.isEmpty {
            let (vx, vy, vn) = validation.rows
            v = (try s.applied(vx, rows: vn), vn, vy)
        }
        emit(.fitStarted)
        let m = try LogisticRegression.fit(x: x, rows: n, cols: d, labels: y, classes: classes, validation: v,
                                           options: options, progress: { emit(.iteration($0)) })
        return Head(standardizer: s, model: m)
    }
}
