import Foundation
import Testing
import MLToolCore
@testable import MLToolFormat
import MLToolTestSupport
@testable import MLToolTabular

/// The linear learner on real tables (datasets/tabular.sh's fixed splits) against scikit-learn's LogisticRegression
/// and Ridge fitted in the same run on the same derived columns with the same penalty
/// (Tests/Fixtures/tabular/sklearn_linear.py): the test rows' probabilities or predictions, not only the scores.
@Suite struct LinearTests {
    typealias Set = BoostedTreeTests.Set

    static func oracle(_ set: String, _ target: String, alpha: Double = 1) throws -> [String: Any]? {
        try JSONOracle.call("Tests/Fixtures/tabular/sklearn_linear.py", ["dir": BoostedTreeTests.root + "/" + set, "target": target, "alpha": alpha],
                            missing: "scikit-learn (pip install scikit-learn)")
    }

    static func fit(_ s: Set, alpha: Double = 1) throws -> TreeEnsemble {
        try LinearTrainer(l2: alpha).train(schema: s.schema, train: s.train, targets: s.trainTargets)
    }

    /// The largest difference of a test row's class probability from scikit-learn's (classes matched by name), the
    /// rows whose most probable class differs, and mltool's test accuracy.
    static func compare(_ e: TreeEnsemble, _ s: Set, _ reply: [String: Any])
        -> (ours: [Double], theirs: [Double], disagreements: Int, accuracy: Double) {
        let classes = reply["classes"] as? [String] ?? [], theirs = reply["probabilities"] as? [[Double]] ?? []
        let ours = e.predict(s.test), k = e.labels.count
        let column = e.labels.map { classes.firstIndex(of: $0) ?? -1 }
        var mine: [Double] = [], peer: [Double] = [], disagreements = 0, right = 0
        for r in 0..<s.test.rowCount {
            let p = (0..<k).map { Double(ours[r * k + $0]) }
            let best = p.indices.max { p[$0] < p[$1] } ?? 0
            if best == Int(s.testTargets[r]) { right += 1 }
            guard r < theirs.count, column.allSatisfy({ $0 >= 0 && $0 < theirs[r].count }) else { return ([], [.nan], s.test.rowCount, 0) }
            let q = column.map { theirs[r][$0] }
            mine += p; peer += q
            if best != (q.indices.max { q[$0] < q[$1] } ?? 0) { disagreements += 1 }
        }
        return (mine, peer, disagreements, Double(right) / Double(s.test.rowCount))
    }

    @Test func pimaLogisticMatchesScikitLearn() throws {
        guard let s = try BoostedTreeTests.load("pima", target: "diabetes"), let reply = try Self.oracle("pima", "diabetes") else { return }
        let e = try Self.fit(s)
        let c = Self.compare(e, s, reply)
        print("pima logistic: \(c.disagreements) rows differ, accuracy mltool \(c.accuracy), scikit-learn \(reply["score"] ?? "")")
        #expect(e.learner == .linear && e.linear?.weights.count == 16 && e.treeCount == 0)
        // Measured max |Δp| 2.4e-6, no row's class differs, accuracy 0.8175 (112 of 137) for both (scikit-learn 1.9.1).
        assertClose(c.ours, c.theirs, atol: 1e-5, "pima probabilities against scikit-learn's")
        #expect(c.disagreements == 0 && c.accuracy >= 0.810, "\(c.disagreements) rows differ, accuracy \(c.accuracy)")
    }

    @Test func letterSoftmaxMatchesScikitLearn() throws {
        guard let s = try BoostedTreeTests.load("letter", target: "lettr"), let reply = try Self.oracle("letter", "lettr") else { return }
        let e = try Self.fit(s)
        let c = Self.compare(e, s, reply)
        print("letter softmax: \(c.disagreements) rows differ, accuracy mltool \(c.accuracy), scikit-learn \(reply["score"] ?? "")")
        // Measured max |Δp| 2.0e-5, no row's class differs, accuracy 0.7828 for both (scikit-learn 1.9.1); the margin
        // on accuracy is 2 rows.
        assertClose(c.ours, c.theirs, atol: 1e-4, "letter probabilities against scikit-learn's")
        #expect(c.disagreements <= 1 && c.accuracy >= 0.7823, "\(c.disagreements) rows differ, accuracy \(c.accuracy)")
    }

    @Test func diamondsRidgeMatchesScikitLearn() throws {
        guard let s = try BoostedTreeTests.load("diamonds", target: "price"), let reply = try Self.oracle("diamonds", "price"),
              let theirs = reply["predictions"] as? [Double] else { return }
        let e = try Self.fit(s)
        let ours = e.predict(s.test)
        let rmse = ForestTests.rmse(e, s.test, s.testTargets)
        print("diamonds ridge: RMSE mltool \(rmse), scikit-learn \(reply["score"] ?? "")")
        // Measured max |Δ| 0.00103 (prices of 326 to 18,823: binary32 weights), RMSE 1112.228 for both.
        assertClose(ours, theirs, atol: 0.005, "diamonds predictions against scikit-learn's")
        #expect(rmse < 1113, "RMSE \(rmse)")
    }

    @Test func sameRowsSameBytes() throws {
        guard let s = try BoostedTreeTests.load("pima", target: "diabetes") else { return }
        let a = try ModelFile.serialize(try Self.fit(s).model()), b = try ModelFile.serialize(try Self.fit(s).model())
        let other = try ModelFile.serialize(try Self.fit(s, alpha: 10).model())
        #expect(a == b && a != other)
    }
}

/// A linear model's file (docs/FORMAT.md 4.5, "Linear models"): the round trip, the scoring rule on a hand-made model,
/// and damaged files each refused with their exact error.
@Suite struct LinearFileTests {
    /// x numeric (mean 1, scale 2), colour categorical of 3: D = 5 columns (x̃, x missing, red, green, blue); binary.
    static func model() -> TreeEnsemble {
        var e = TreeEnsemble(objective: .binary, target: "y", labels: ["no", "yes"],
                             features: [.init(name: "x", kind: .numeric),
                                        .init(name: "colour", kind: .categorical, categories: ["red", "green", "blue"])],
                             baseScores: [0.25])
        e.learner = .linear
        e.linear = LinearTerms(means: [1, 0], scales: [2, 1], weights: [0.5, -1, 0.25, 0.5, 1])
        return e
    }

    @Test func roundTripAndTheScoringRule() throws {
        let bytes = try ModelFile.serialize(Self.model().model(name: "l"))
        let back = try TreeEnsemble(model: try ModelFile.read(bytes: bytes, name: "l.bin"))
        #expect(back.learner == .linear && back.linear == Self.model().linear)
        // x 2, red: 0.25 + 2·0.5 + 0.25; x missing, green: 0.25 − 1 + 0.5; x 0, colour missing: 0.25 − 2·0.5;
        // x 1, an unknown category code: 0.25 (all one-hot columns 0). Exact in binary32.
        let m = FeatureMatrix(rowCount: 4, columns: [[2, .nan, 0, 1], [0, 1, .nan, 7]])
        #expect(back.scores(m) == [1.5, -0.25, -0.75, 0.25])
        let p = back.predict(m)
        #expect(abs(p[1] - Float(1 / (1 + exp(-1.5)))) < 1e-7 && p[0] + p[1] == 1)
    }

    enum Damage: String, CaseIterable {
        case weightsShape, zeroScale, nanWeight, missingWeights, weightsOnBoostedModel, linearWithTrees, scalingDType
    }

    static func damaged(_ d: Damage) -> (Model, FormatError) {
        var m = model().model()
        func bad(_ field: String, _ reason: String) -> FormatError { .badGraph(file: "l.bin", node: "tabular", field: field, reason: reason) }
        func replace(_ name: String, _ t: StoredTensor) { m.tensors[m.tensors.firstIndex { $0.name == name }!] = t }
        switch d {
        case .weightsShape:
            replace("tabular.weights", StoredTensor(name: "tabular.weights", tensor: Tensor(shape: [4, 1], data: [1, 2, 3, 4])))
            return (m, .badTensor(file: "l.bin", tensor: "tabular.weights", field: "shape", expected: "[5, 1]", actual: "[4, 1]"))
        case .zeroScale:
            replace("tabular.scaling", StoredTensor(name: "tabular.scaling", tensor: Tensor(shape: [2, 2], data: [1, 0, 0, 1])))
            return (m, .badTensor(file: "l.bin", tensor: "tabular.scaling", field: "values", expected: "a finite scale > 0", actual: "element 1: 0.0"))
        case .nanWeight:
            replace("tabular.weights", StoredTensor(name: "tabular.weights", tensor: Tensor(shape: [5, 1], data: [1, 2, .nan, 4, 5])))
            return (m, .badTensor(file: "l.bin", tensor: "tabular.weights", field: "values", expected: "finite", actual: "element 2: nan"))
        case .missingWeights:
            m.metadata.tabular?.weightsTensor = nil
            return (m, bad("weightsTensor", "missing for learner 'linear'"))
        case .weightsOnBoostedModel:
            m.metadata.tabular?.learner = nil
            return (m, bad("weightsTensor", "present for learner 'boosted'; only a linear model has weights"))
        case .linearWithTrees:
            m = TreeFileTests.ensemble().model()
            m.metadata.tabular?.learner = "linear"
            return (m, bad("learner", "'linear' with trees (it has none: treesTensor [1])"))
        case .scalingDType:
            replace("tabular.scaling", StoredTensor(name: "tabular.scaling", dtype: .i32, shape: [2, 2], bytes: TensorBytes(copying: [UInt8](repeating: 0, count: 16))))
            return (m, .badTensor(file: "l.bin", tensor: "tabular.scaling", field: "dtype", expected: "f32", actual: "i32"))
        }
    }

    @Test(arguments: Damage.allCases) func damagedFilesAreRefused(_ d: Damage) throws {
        let (model, expected) = Self.damaged(d)
        #expect(throws: expected) { _ = try ModelFile.serialize(model, asWrittenTo: "l.bin") }
    }

    /// Every prefix of a linear model's file is refused, never a trap.
    @Test func everyPrefixIsRefused() throws {
        let bytes = try ModelFile.serialize(Self.model().model(name: "l"))
        for n in stride(from: 0, to: bytes.count, by: 7) {
            #expect(throws: (any Error).self) { _ = try ModelFile.read(bytes: Array(bytes.prefix(n)), name: "l.bin") }
        }
    }
}
