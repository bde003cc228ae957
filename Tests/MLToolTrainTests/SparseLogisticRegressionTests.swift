import MLToolCore
import MLToolData
import MLToolTestSupport
import Testing
@testable import MLToolTrain

@Suite struct SparseLogisticRegressionTests {
    /// A random sparse problem: about 10% non-zeros, the class leaking into a few columns.
    func problem(rows: Int, cols: Int, classes: Int, seed: UInt64) throws -> (CSRMatrix, [Int]) {
        try sparseProblem(rows: rows, cols: cols, classes: classes, seed: seed, density: 0.1, leak: 0.3, offset: 0.5,
                          normalise: false)
    }

    @Test func sparseFitMatchesDenseFit() throws {
        let (x, labels) = try problem(rows: 300, cols: 60, classes: 3, seed: 5)
        let options = LogisticRegressionOptions(l2: .fixed(1e-2), maxIterations: 1000, tolerance: 1e-7,
                                                lossTolerance: 0)
        let sparse = try LogisticRegression.fit(sparse: x, labels: labels, classes: 3, validation: nil,
                                                options: options, progress: nil)
        let dense = try LogisticRegression.fit(x: x.dense(), rows: 300, cols: 60, labels: labels, classes: 3,
                                               validation: nil, options: options, progress: nil)
        assertClose(sparse.weights, dense.weights.map(Double.init), atol: 1e-4, "sparse vs dense weights")
        assertClose(sparse.bias, dense.bias.map(Double.init), atol: 1e-4, "sparse vs dense bias")
        #expect(sparse.features == 60 && sparse.classes == 3)
    }

    @Test func sparseFitIsDeterministicAndUsesValidation() throws {
        let (x, labels) = try problem(rows: 400, cols: 80, classes: 4, seed: 8)
        let (v, vl) = try problem(rows: 100, cols: 80, classes: 4, seed: 9)
        func fit() throws -> LogisticRegressionModel {
            try LogisticRegression.fit(sparse: x, labels: labels, classes: 4, validation: (v, vl),
                                       options: LogisticRegressionOptions(l2: .auto), progress: nil)
        }
        let (a, b) = try (fit(), fit())
        #expect(a.weights.map(\.bitPattern) == b.weights.map(\.bitPattern))
        #expect(a.chosenL2 == b.chosenL2)
        #expect((a.validationAccuracy ?? 0) > 0.8)
    }

    @Test func mismatchedValidationThrows() throws {
        let (x, labels) = try problem(rows: 20, cols: 10, classes: 2, seed: 1)
        let (v, vl) = try problem(rows: 5, cols: 11, classes: 2, seed: 2)
        #expect(throws: TrainError.shapeMismatch(what: "validation features", expected: "≥ 1 row × 10 columns",
                                                 actual: "5 rows × 11 columns")) {
            try LogisticRegression.fit(sparse: x, labels: labels, classes: 2, validation: (v, vl),
                                       options: LogisticRegressionOptions(), progress: nil)
        }
    }
}

@Suite struct TextClassifierEndToEndTests {
    /// Raw strings → TF-IDF → sparse max-entropy → labels of unseen strings.
    @Test func classifiesUnseenText() throws {
        let train = [
            ("the cat sat on the mat", 0), ("a cat and a kitten purr", 0), ("my kitten chases the cat", 0),
            ("cats sleep all day, the cat purrs", 0), ("kitten and cat play with a mat", 0),
            ("parse json with a fast c library", 1), ("json library for python", 1),
            ("a small c library to parse options", 1), ("library bindings for json parsing", 1),
            ("fast parser library written in c", 1),
        ]
        let vectorizer = try TextVectorizer.fit(documents: train.map(\.0), config: TextConfig())
        let x = try vectorizer.transform(train.map(\.0))
        let model = try LogisticRegression.fit(sparse: x, labels: train.map(\.1), classes: 2, validation: nil,
                                               options: LogisticRegressionOptions(l2: .fixed(1e-2)), progress: nil)
        let p = try model.probabilities(sparse: vectorizer.transform(["a sleepy kitten", "JSON parser in C"]))
        #expect(p[0] > 0.5 && p[3] > 0.5, "probabilities \(p)")
        #expect(abs(p[0] + p[1] - 1) < 1e-6)
        // Dense and sparse predictions of the same rows agree.
        let dense = try model.probabilities(x.dense(), rows: x.rows)
        assertClose(try model.probabilities(sparse: x), dense.map(Double.init), atol: 1e-6, "sparse vs dense")
        #expect(throws: TrainError.self) { try model.probabilities(sparse: CSRMatrix(rows: 0, cols: 3, rowOffsets: [0], columns: [], values: [])) }
    }
}
