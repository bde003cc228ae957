import Dispatch
import Foundation
import MLToolCore
import MLToolData
import MLToolEval
import MLToolTrain

extension ImageClassifierTrainer {
    /// The fitted head and its metrics ("train.accuracy", "validation.accuracy", "holdout.accuracy", "l2").
    struct HeadFit {
        var standardizer: Standardizer
        var head: LogisticRegressionModel
        var metrics: [String: Double]
    }

    /// Standardises the features (training rows' statistics), ranks the L2 strengths on the validation split and
    /// refits the winner on training + validation rows, then measures accuracy. The rows live in memory, or, when
    /// `outOfCore`, in a scratch row file filled from the feature cache and read a block at a time: the two give
    /// the same bits (same blocks, products and sums), so the same model.
    func fitHead(train: inout [Featured], validation: inout [Featured], holdout: [Featured], labels: [String],
                 width: Int, outOfCore: Bool, emit: @escaping (PipelineEvent) -> Void,
                 cancellation: Cancellation) throws -> HeadFit {
        guard !train.isEmpty else {
            throw PipelineError.badInput(file: data.location ?? "<memory>", reason: "no usable training images")
        }
        let labelIndex = Dictionary(labels.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
        let problem = HeadProblem(yTrain: train.map { labelIndex[$0.item.label] ?? 0 },
                                  yValidation: validation.map { labelIndex[$0.item.label] ?? 0 }, classes: labels.count,
                                  width: width, parameters: parameters, emit: emit, cancellation: cancellation)
        let (standardizer, head, trainAccuracy) = outOfCore ? try fitOutOfCore(train + validation, problem)
            : try fitInMemory(&train, &validation, problem)
        var metrics = [String: Double]()
        metrics["train.accuracy"] = trainAccuracy
        metrics["validation.accuracy"] = head.validationAccuracy
        // The holdout, standardised a block at a time (from memory, or read back from the cache out of core).
        let yHoldout = holdout.map { labelIndex[$0.item.label] ?? 0 }
        metrics["holdout.accuracy"] = try accuracy(head, rows: holdout.count, labels: yHoldout, width: width) { r in
            let part = holdout[r]
            return try standardizer.applied(
                outOfCore ? try cachedRows(part, width: width) : matrix(part, width), rows: r.count)
        }
        metrics["l2"] = head.chosenL2
        return HeadFit(standardizer: standardizer, head: head, metrics: metrics)
    }

    /// What the head is fitted to (labels of the training and validation rows, classes, width) and how: the
    /// search's options and the refit's.
    struct HeadProblem {
        var yTrain: [Int], yValidation: [Int], classes: Int, width: Int
        var options = LogisticRegressionOptions(), refit = LogisticRegressionOptions(), refitting = false
        let emit: (PipelineEvent) -> Void
        let cancellation: Cancellation
        var nTrain: Int { yTrain.count }
        var nValidation: Int { yValidation.count }
        var progress: (IterationRecord) -> Void { { [emit] in emit(.iteration($0)) } }

        init(yTrain: [Int], yValidation: [Int], classes: Int, width: Int, parameters p: ImageClassifierParameters,
             emit: @escaping (PipelineEvent) -> Void, cancellation: Cancellation) {
            (self.yTrain, self.yValidation, self.classes, self.width) = (yTrain, yValidation, classes, width)
            (self.emit, self.cancellation) = (emit, cancellation)
            options.l2 = p.l2
            options.maxIterations = p.maxIterations
            options.balanceClasses = p.balanceClasses
            options.earlyStoppingPatience = p.earlyStoppingPatience
            options.l2Grid = p.l2Grid
            options.tolerance = p.tolerance
            options.selection = .logLoss
            let fullIterations = options.maxIterations
            // Not when fine-tuning follows: the validation split then chooses its epoch, and must be unseen.
            refitting = options.l2 == .auto && yValidation.count > 0 && p.fineTune == 0
            // Choosing the strength needs the validation loss of each candidate, not a fully converged fit: the
            // search stops each candidate early and the refit below converges.
            if refitting { options.maxIterations = min(fullIterations, p.searchIterations) }
            refit = options
            refit.maxIterations = fullIterations
        }

        /// The search (on training rows, scored on validation rows), then, when `refitting`, the refit of the
        /// chosen strength on training + validation rows from the chosen fit (the added rows move the optimum only
        /// a little). `fit(search, options, warmStart)` runs one of them on wherever the rows are.
        func searchAndRefit(_ fit: (_ search: Bool, _ options: LogisticRegressionOptions,
                                    _ warmStart: LogisticRegressionModel?) throws -> LogisticRegressionModel) throws
            -> LogisticRegressionModel {
            emit(.fitStarted)
            var fitted = try fit(true, options, nil)
            try cancellation.check()
            guard refitting else { return fitted }
            let chosen = fitted
            var refit = refit
            refit.l2 = .fixed(chosen.chosenL2)
            fitted = try fit(false, refit, chosen)
            fitted.validationAccuracy = chosen.validationAccuracy
            fitted.validationLoss = chosen.validationLoss
            return fitted
        }
    }

    /// Training rows, then validation rows, in one scratch file beside the cache; memory holds blocks.
    private func fitOutOfCore(_ items: [Featured], _ h: HeadProblem) throws -> (Standardizer, LogisticRegressionModel, Double?) {
        let (nTrain, nValidation, width) = (h.nTrain, h.nValidation, h.width)
        let rows = try FeatureRowFile(directory: cacheFolder, cols: width)
        try copyCachedRows(items, width: width, into: rows, cancellation: h.cancellation)
        let standardizer = try Standardizer.fit(file: rows, rows: nTrain)
        try standardizer.apply(file: rows, rows: 0..<(nTrain + nValidation))
        let head = try h.searchAndRefit { search, o, warm in
            search
                ? try LogisticRegression.fit(
                    file: rows, rows: 0..<nTrain, labels: h.yTrain, classes: h.classes,
                    validation: nValidation > 0 ? (nTrain..<(nTrain + nValidation), h.yValidation) : nil,
                    options: o, progress: h.progress)
                : try LogisticRegression.fit(
                    file: rows, rows: 0..<(nTrain + nValidation), labels: h.yTrain + h.yValidation, classes: h.classes,
                    validation: nil, options: o, warmStart: warm, progress: nil)
        }
        let trainAccuracy = try accuracy(head, rows: nTrain, labels: h.yTrain, width: width) { r in
            var block = [Float](repeating: 0, count: r.count * width)
            try block.withUnsafeMutableBufferPointer { try rows.read(rows: r, into: $0.baseAddress!) }
            return block
        }
        return (standardizer, head, trainAccuracy)
    }

    /// Memory: one matrix for training + validation rows (room reserved up front, so appending the validation rows
    /// for the refit never copies it), standardised in place; the per-image copies are released once they are in
    /// it. 60,000 Fashion-MNIST images peaked at 1.09 GiB before this, with four full copies.
    private func fitInMemory(_ train: inout [Featured], _ validation: inout [Featured],
                             _ h: HeadProblem) throws -> (Standardizer, LogisticRegressionModel, Double?) {
        let (nTrain, nValidation, width) = (h.nTrain, h.nValidation, h.width)
        var x = [Float]()
        x.reserveCapacity((nTrain + nValidation) * width)
        for r in train { x += r.features }
        let standardizer = try Standardizer.fit(x: x, rows: nTrain, cols: width)
        try standardizer.apply(&x, rows: nTrain)
        let xValidation = validation.isEmpty ? [] : try standardizer.applied(matrix(validation, width), rows: nValidation)
        train = train.map { Featured(item: $0.item, sha256: $0.sha256, key: $0.key, features: []) }
        validation = validation.map { Featured(item: $0.item, sha256: $0.sha256, key: $0.key, features: []) }
        let head = try h.searchAndRefit { search, o, warm in
            if search {
                return try LogisticRegression.fit(
                    x: x, rows: nTrain, cols: width, labels: h.yTrain, classes: h.classes,
                    validation: nValidation > 0 ? (xValidation, nValidation, h.yValidation) : nil, options: o,
                    progress: h.progress)
            }
            x.append(contentsOf: xValidation)
            return try LogisticRegression.fit(
                x: x, rows: nTrain + nValidation, cols: width, labels: h.yTrain + h.yValidation, classes: h.classes,
                validation: nil, options: o, warmStart: warm, progress: nil)
        }
        let trainAccuracy = try accuracy(head, rows: nTrain, labels: h.yTrain, width: width) { r in
            Array(x[(r.lowerBound * width)..<(r.upperBound * width)])
        }
        return (standardizer, head, trainAccuracy)
    }

    /// The rows of `items` (features in memory) as one row-major matrix.
    private func matrix<C: Collection>(_ items: C, _ width: Int) -> [Float] where C.Element == Featured {
        var m = [Float]()
        m.reserveCapacity(items.count * width)
        for r in items { m += r.features }
        return m
    }

    /// Accuracy of `head` on `rows` standardised rows handed over by `block` (4,096 rows at a time, as the model
    /// computes them after extraction); nil for no rows.
    private func accuracy(_ head: LogisticRegressionModel, rows: Int, labels truth: [Int], width: Int,
                          block: (Range<Int>) throws -> [Float]) throws -> Double? {
        guard rows > 0 else { return nil }
        let k = head.classes
        var correct = 0
        for start in stride(from: 0, to: rows, by: 4096) {
            let end = min(rows, start + 4096)
            let p = try head.probabilities(try block(start..<end), rows: end - start)
            for i in 0..<(end - start) where Metrics.argmax(Array(p[(i * k)..<((i + 1) * k)])) == truth[start + i] {
                correct += 1
            }
        }
        return Double(correct) / Double(rows)
    }

    /// The cached features of `items`, read in parallel, as one row-major matrix. Every entry was read or written
    /// by this run's extraction; one that has gone since (removed by hand, damaged) is an error naming it.
    private func cachedRows<C: Collection>(_ items: C, width: Int) throws -> [Float] where C.Element == Featured {
        let cache = FeatureCache(directory: cacheFolder)
        let list = Array(items)
        var m = [Float](repeating: 0, count: list.count * width)
        let missing = Slots<Int>(count: list.count)
        m.withUnsafeMutableBufferPointer { buffer in
            let out = SharedPointer(p: buffer.baseAddress!)
            DispatchQueue.concurrentPerform(iterations: list.count) { i in
                guard let f = cache.get(key: list[i].key), f.count == width else { return missing.set(i, i) }
                f.withUnsafeBufferPointer { (out.p + i &* width).update(from: $0.baseAddress!, count: width) }
            }
        }
        if let i = missing.values.first {
            throw PipelineError.badInput(
                file: cache.path(for: list[i].key),
                reason: "the cached features of \(list[i].item.path) (\(width) values), read earlier in this run, are "
                    + "gone or damaged; run the training again to recompute them")
        }
        return m
    }

    /// Appends the cached rows of `items` to `file`, 1,024 at a time.
    private func copyCachedRows(_ items: [Featured], width: Int, into file: FeatureRowFile,
                                cancellation: Cancellation) throws {
        var start = 0
        while start < items.count {
            try cancellation.check()
            let end = min(items.count, start + 1024)
            let block = try cachedRows(items[start..<end], width: width)
            try block.withUnsafeBufferPointer { try file.append($0.baseAddress!, count: end - start) }
            start = end
        }
    }
}
