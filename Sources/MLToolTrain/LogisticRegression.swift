import COpenBLAS
import Dispatch
import MLToolCore

/// Multinomial logistic regression (max-entropy) with L2, fitted by L-BFGS: the classifier head of `mltool train`.
/// Sparse features may start with seeded SGD epochs (`LogisticRegressionOptions.sgdEpochs`, what text training
/// uses), after which L-BFGS runs its `maxIterations` (0: the SGD result is the fit).
///
/// Same data, options and thread count give bit-identical weights: every reduction runs in a fixed order.
/// Features should be standardised first (`Standardizer`), then the standardisation folded into the model.
public enum LogisticRegression {
    /// Fits weights for `rows × cols` row-major features `x` and labels in `0..<classes`.
    ///
    /// - Parameters:
    ///   - validation: a held-out split, used by `.auto` L2, early stopping and the progress table.
    ///   - sampleWeights: one non-negative weight per row (nil: all 1).
    ///   - progress: called once per iteration (and once for the starting point of each L2 value).
    /// - Returns: weights `cols × classes` (IN, OUT) and bias, as a dense layer.
    ///   - warmStart: weights and bias to start from (e.g. the fit on a subset of the rows), instead of zero.
    public static func fit(x: [Float], rows: Int, cols: Int, labels: [Int], classes: Int,
                           validation: (x: [Float], rows: Int, labels: [Int])?,
                           options: LogisticRegressionOptions, sampleWeights: [Float]? = nil,
                           warmStart: LogisticRegressionModel? = nil,
                           progress: ((IterationRecord) -> Void)?) throws -> LogisticRegressionModel {
        // One BLAS thread: the fit is then bit-identical on every machine, and on a shared 2-core machine it was
        // also about twice as fast (2000 × 1280, 10 classes: 1.8 s vs 3.6 s under load).
        openblas_set_num_threads(1)
        try checkDense(x, rows: rows, cols: cols, what: "training features")
        if let v = validation { try checkDense(v.x, rows: v.rows, cols: cols, what: "validation features") }
        return try x.withUnsafeBufferPointer { xp in
            let train = DenseRows(base: xp.baseAddress!, rows: rows, cols: cols)
            guard let v = validation else {
                return try fit(train, nil as DenseRows?, labels: labels, validationLabels: [], classes: classes,
                               options: options, sampleWeights: sampleWeights, warmStart: warmStart,
                               progress: progress)
            }
            return try v.x.withUnsafeBufferPointer { vp in
                try fit(train, DenseRows(base: vp.baseAddress!, rows: v.rows, cols: cols), labels: labels,
                        validationLabels: v.labels, classes: classes, options: options,
                        sampleWeights: sampleWeights, warmStart: warmStart, progress: progress)
            }
        }
    }

    /// Fits weights for rows of a `FeatureRowFile` (out of core): the training rows `rows`, the validation rows
    /// `validation.rows` of the same file. Memory holds the weights and a few blocks of rows, whatever the number of
    /// rows; every evaluation reads the rows once. Given the same rows, the result is bit-identical to the in-memory
    /// `fit(x:…)`: the same blocks, products and sums in the same order.
    public static func fit(file: FeatureRowFile, rows: Range<Int>, labels: [Int], classes: Int,
                           validation: (rows: Range<Int>, labels: [Int])?, options: LogisticRegressionOptions,
                           sampleWeights: [Float]? = nil, warmStart: LogisticRegressionModel? = nil,
                           progress: ((IterationRecord) -> Void)?) throws -> LogisticRegressionModel {
        openblas_set_num_threads(1)
        for (what, r) in [("training rows", rows), ("validation rows", validation?.rows ?? 0..<1)]
            where r.isEmpty || r.lowerBound < 0 || r.upperBound > file.rows {
            throw TrainError.shapeMismatch(what: what, expected: "a non-empty part of the file's \(file.rows) rows",
                                           actual: "rows \(r.lowerBound)..<\(r.upperBound)")
        }
        let train = FileRows(file: file, first: rows.lowerBound, rows: rows.count)
        let model = try fit(train, validation.map { FileRows(file: file, first: $0.rows.lowerBound, rows: $0.rows.count) },
                            labels: labels, validationLabels: validation?.labels ?? [], classes: classes,
                            options: options, sampleWeights: sampleWeights, warmStart: warmStart, progress: progress)
        try file.check()
        return model
    }

    /// Fits weights for sparse rows (e.g. TF-IDF text features), `x.cols × classes`; otherwise as the dense `fit`.
    /// Memory is proportional to the non-zeros plus the weights.
    public static func fit(sparse x: CSRMatrix, labels: [Int], classes: Int,
                           validation: (x: CSRMatrix, labels: [Int])?, options: LogisticRegressionOptions,
                           sampleWeights: [Float]? = nil,
                           progress: ((IterationRecord) -> Void)?) throws -> LogisticRegressionModel {
        guard x.rows >= 1, x.cols >= 1 else {
            throw TrainError.shapeMismatch(what: "training features", expected: "at least 1 row and 1 column",
                                           actual: "\(x.rows) rows × \(x.cols) columns")
        }
        if let v = validation, v.x.cols != x.cols || v.x.rows < 1 {
            throw TrainError.shapeMismatch(what: "validation features", expected: "≥ 1 row × \(x.cols) columns",
                                           actual: "\(v.x.rows) rows × \(v.x.cols) columns")
        }
        guard options.sgdEpochs >= 0, options.sgdLearningRate > 0, options.sgdLearningRate.isFinite else {
            throw TrainError.invalidOption(name: "sgd", value: "\(options.sgdEpochs) epochs, rate \(options.sgdLearningRate)",
                                           expected: "epochs ≥ 0 and a finite rate > 0")
        }
        // The columns of x make the gradient's product a gather (see SparseColumns); only L-BFGS needs it.
        return try SparseRows.with(x, transposed: options.maxIterations > 0) { train in
            // With SGD every L2 value starts from zero, so the values run side by side, one thread each: the
            // result does not depend on the thread count.
            let starts: (([Double], [Int32], [Double]?) -> [[Float]])? = options.sgdEpochs == 0 ? nil : { grid, y, w in
                let results = Slots<[Float]>(count: grid.count)
                DispatchQueue.concurrentPerform(iterations: grid.count) { i in
                    let sgd = SoftmaxSGD(matrix: train, labels: y, rowWeights: w, classes: classes, l2: grid[i],
                                         epochs: options.sgdEpochs, learningRate: options.sgdLearningRate,
                                         seed: options.seed)
                    results.set(i, sgd.run())
                }
                return results.values
            }
            guard let v = validation else {
                return try fit(train, nil as SparseRows?, labels: labels, validationLabels: [], classes: classes,
                               options: options, sampleWeights: sampleWeights, startingPoints: starts,
                               progress: progress)
            }
            return try SparseRows.with(v.x) { valid in
                try fit(train, valid, labels: labels, validationLabels: v.labels, classes: classes,
                        options: options, sampleWeights: sampleWeights, startingPoints: starts, progress: progress)
            }
        }
    }

    /// Throws unless `x` holds exactly rows × cols finite values, rows ≥ 1 and cols ≥ 1.
    static func checkDense(_ x: [Float], rows: Int, cols: Int, what: String) throws {
        guard rows >= 1, cols >= 1 else {
            throw TrainError.shapeMismatch(what: what, expected: "at least 1 row and 1 column",
                                           actual: "\(rows) rows × \(cols) columns")
        }
        let count = try Checked.mul(rows, cols, what: what)
        guard x.count == count else {
            throw TrainError.shapeMismatch(what: what, expected: "\(count) values (\(rows) rows × \(cols) columns)",
                                           actual: "\(x.count) values")
        }
        for (i, v) in x.enumerated() where !v.isFinite {
            throw TrainError.nonFiniteValue(what: what, row: i / cols, column: i % cols, value: "\(v)")
        }
    }

    /// The shared driver for dense and sparse features.
    static func fit<M: FeatureMatrix>(_ train: M, _ validation: M?, labels: [Int], validationLabels: [Int],
                                      classes: Int, options: LogisticRegressionOptions, sampleWeights: [Float]?,
                                      warmStart: LogisticRegressionModel? = nil,
                                      startingPoints: (([Double], [Int32], [Double]?) -> [[Float]])? = nil,
                                      progress: ((IterationRecord) -> Void)?) throws -> LogisticRegressionModel {
        let start = ContinuousClock.now
        try checkOptions(options, classes: classes)
        let trainLabels = try checkLabels(labels, rows: train.rows, classes: classes, what: "training labels")
        let rowWeights = try weights(labels: trainLabels, classes: classes, sampleWeights: sampleWeights,
                                     balance: options.balanceClasses)
        var validationObjective: SoftmaxObjective<M>?
        if let validation {
            let vl = try checkLabels(validationLabels, rows: validation.rows, classes: classes,
                                     what: "validation labels")
            validationObjective = SoftmaxObjective(matrix: validation, labels: vl, rowWeights: nil, classes: classes,
                                                   l2: 0)
        }
        var objective = SoftmaxObjective(matrix: train, labels: trainLabels, rowWeights: rowWeights,
                                         classes: classes, l2: 0)
        let grid: [Double]
        switch options.l2 {
        case .fixed(let l2): grid = [l2]
        case .auto: grid = validation == nil ? [1 / Double(train.rows)] : options.l2Grid
        }

        var history: [IterationRecord] = []
        var theta = [Float](repeating: 0, count: objective.parameterCount)
        if let w = warmStart {
            guard w.features == train.cols, w.classes == classes, w.weights.count + w.bias.count == theta.count,
                  (w.weights + w.bias).allSatisfy(\.isFinite) else {
                throw TrainError.shapeMismatch(what: "warm start", expected: "\(train.cols)×\(classes) finite weights",
                                               actual: "\(w.features)×\(w.classes), \(w.weights.count) weights")
            }
            theta = w.weights + w.bias
        }
        var chosen: (l2: Double, outcome: SoftmaxTrainer<M>.Outcome)?
        let starts = startingPoints?(grid, trainLabels, rowWeights)
        for (index, l2) in grid.enumerated() {
            objective.l2 = l2
            let trainer = SoftmaxTrainer(objective: objective, validation: validationObjective, options: options,
                                         start: start, progress: progress)
            let outcome = trainer.fit(from: starts?[index] ?? theta, stochastic: starts != nil, history: &history)
            theta = outcome.theta  // warm start for the next, weaker L2
            if let best = chosen {
                let a = outcome.validationAccuracy ?? 0, b = best.outcome.validationAccuracy ?? 0
                let lossA = outcome.validationLoss ?? .infinity, lossB = best.outcome.validationLoss ?? .infinity
                let better = options.selection == .logLoss ? lossA < lossB : a > b || (a == b && lossA < lossB)
                if better { chosen = (l2, outcome) }
            } else {
                chosen = (l2, outcome)
            }
        }
        guard let chosen else { throw TrainError.invalidOption(name: "l2Grid", value: "[]", expected: "a value") }
        let d = train.cols, k = classes
        return LogisticRegressionModel(
            weights: Array(chosen.outcome.theta[0..<(d * k)]), bias: Array(chosen.outcome.theta[(d * k)...]),
            classes: k, features: d, chosenL2: chosen.l2, history: history, stopReason: chosen.outcome.stopReason,
            iterations: chosen.outcome.iterations, trainAccuracy: chosen.outcome.trainAccuracy,
            validationAccuracy: chosen.outcome.validationAccuracy, validationLoss: chosen.outcome.validationLoss)
    }

    static func checkOptions(_ o: LogisticRegressionOptions, classes: Int) throws {
        guard classes >= 2 else {
            throw TrainError.invalidOption(name: "classes", value: "\(classes)", expected: "at least 2")
        }
        func l2Valid(_ v: Double) -> Bool { v.isFinite && v >= 0 }
        if case .fixed(let v) = o.l2, !l2Valid(v) {
            throw TrainError.invalidOption(name: "l2", value: "\(v)", expected: "a finite value ≥ 0")
        }
        if o.l2 == .auto, o.l2Grid.isEmpty || !o.l2Grid.allSatisfy(l2Valid) {
            throw TrainError.invalidOption(name: "l2Grid", value: "\(o.l2Grid)", expected: "finite values ≥ 0")
        }
        guard o.maxIterations >= 0 else {
            throw TrainError.invalidOption(name: "maxIterations", value: "\(o.maxIterations)", expected: "≥ 0")
        }
        guard o.tolerance >= 0, o.tolerance.isFinite, o.lossTolerance >= 0, o.lossTolerance.isFinite else {
            throw TrainError.invalidOption(name: "tolerance", value: "\(o.tolerance), \(o.lossTolerance)",
                                           expected: "finite values ≥ 0")
        }
        if let p = o.earlyStoppingPatience, p < 1 {
            throw TrainError.invalidOption(name: "earlyStoppingPatience", value: "\(p)", expected: "≥ 1 or nil")
        }
        guard o.historySize >= 1 else {
            throw TrainError.invalidOption(name: "historySize", value: "\(o.historySize)", expected: "≥ 1")
        }
    }

    static func checkLabels(_ labels: [Int], rows: Int, classes: Int, what: String) throws -> [Int32] {
        guard labels.count == rows else {
            throw TrainError.shapeMismatch(what: what, expected: "\(rows) labels (one per row)",
                                           actual: "\(labels.count)")
        }
        guard classes <= Int(Int32.max) else {
            throw TrainError.invalidOption(name: "classes", value: "\(classes)", expected: "< 2^31")
        }
        return try labels.enumerated().map { i, y in
            guard y >= 0, y < classes else {
                throw TrainError.labelOutOfRange(what: what, row: i, label: y, classes: classes)
            }
            return Int32(y)
        }
    }

    /// vᵢ / Σv with vᵢ = sampleWeightᵢ · classWeight(yᵢ); nil when every vᵢ is equal (plain mean).
    static func weights(labels: [Int32], classes: Int, sampleWeights: [Float]?, balance: Bool) throws -> [Double]? {
        let n = labels.count
        var sw = [Double](repeating: 1, count: n)
        if let sampleWeights {
            guard sampleWeights.count == n else {
                throw TrainError.shapeMismatch(what: "sample weights", expected: "\(n) weights (one per row)",
                                               actual: "\(sampleWeights.count)")
            }
            for (i, w) in sampleWeights.enumerated() where !(w.isFinite && w >= 0) {
                throw TrainError.nonFiniteValue(what: "sample weights", row: i, column: 0, value: "\(w)")
            }
            sw = sampleWeights.map(Double.init)
        }
        var classTotal = [Double](repeating: 0, count: classes)
        for i in 0..<n { classTotal[Int(labels[i])] += sw[i] }
        if let empty = classTotal.firstIndex(where: { !($0 > 0) }) {
            throw TrainError.emptyClass(what: "training labels", classIndex: empty)
        }
        if balance {
            // scikit-learn's "balanced": Σw / (k · Σ_{i in c} wᵢ).
            let total = classTotal.reduce(0, +)
            for i in 0..<n { sw[i] *= total / (Double(classes) * classTotal[Int(labels[i])]) }
        } else if sampleWeights == nil {
            return nil
        }
        let sum = sw.reduce(0, +)
        return sw.map { $0 / sum }
    }
}
