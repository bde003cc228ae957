import Foundation
import Testing
import MLToolCore
@testable import MLToolFormat
@testable import MLToolTabular

/// The tree ensemble's file (docs/FORMAT.md 4.5, rule 15): a round trip, the scoring rule, and damaged node tables,
/// each refused with its exact error (the reader never traps: children are checked in range and after their parent).
@Suite struct TreeFileTests {
    /// Two features (x numeric, colour categorical of 3), binary: tree 0 splits x ≤ 1.5 (missing left), its right
    /// child splits colour ∈ {red, blue}; tree 1 is a leaf.
    static func ensemble() -> TreeEnsemble {
        TreeEnsemble(objective: .binary, target: "y", labels: ["no", "yes"],
                     features: [.init(name: "x", kind: .numeric, gain: 2, splits: 1),
                                .init(name: "colour", kind: .categorical, categories: ["red", "green", "blue"], gain: 1, splits: 1)],
                     baseScores: [0.25], treeStarts: [0, 5, 6],
                     nodes: [0, 1, 2, 1, 0,   -1, -1, -1, 0, 0,   1, 3, 4, 2, 0,   -1, -1, -1, 0, 0,   -1, -1, -1, 0, 0,
                             -1, -1, -1, 0, 0],
                     values: [1.5, -1, 0, 2, 3, 0.5], categoryWords: [0b101])
    }

    @Test func roundTripAndTheScoringRule() throws {
        let e = Self.ensemble()
        let bytes = try ModelFile.serialize(e.model(name: "t"))
        let back = try TreeEnsemble(model: try ModelFile.read(bytes: bytes, name: "t.bin"))
        #expect(back.nodes == e.nodes && back.values == e.values && back.categoryWords == e.categoryWords)
        // x = 1 → left leaf −1; x missing → left; x = 2, red → 2; green → 3; colour missing (no missing-left bit) → 3.
        let m = FeatureMatrix(rowCount: 5, columns: [[1, .nan, 2, 2, 2], [0, 0, 0, 1, .nan]])
        let expected: [Float] = [-0.25, -0.25, 2.75, 3.75, 3.75]   // 0.25 + leaf of tree 0 + 0.5, exact in binary32
        #expect(back.scores(m) == expected)
    }

    enum Damage: String, CaseIterable {
        case childOutOfRange, childBeforeParent, twoParents, orphan, categoryWordsOutside, nanValue, startNotZero
        case featureOutOfRange, kindMismatch, unknownFlags, missingTensor, badObjective, leafWithChildren
    }

    static func damaged(_ d: Damage) -> (Model, FormatError) {
        var e = ensemble()
        func node(_ tree: Int, _ i: Int, _ reason: String) -> FormatError {
            .badTensor(file: "t.bin", tensor: "tabular.nodes", field: "values", expected: "docs/FORMAT.md section 4.5",
                       actual: "tree \(tree), node \(i): \(reason)")
        }
        let expected: FormatError
        switch d {
        case .childOutOfRange:
            e.nodes[2] = 5
            expected = node(0, 0, "children 1, 5 are not after the node inside the tree of 5 nodes")
        case .childBeforeParent:
            e.nodes[12] = 0
            expected = node(0, 2, "children 3, 0 are not after the node inside the tree of 5 nodes")
        case .twoParents:
            e.nodes[2] = 3
            expected = node(0, 3, "the child of two splits")
        case .orphan:
            for i in 10..<13 { e.nodes[i] = -1 }
            e.nodes[13] = 0
            expected = node(0, 3, "the child of no split")
        case .categoryWordsOutside:
            e.nodes[14] = 1
            expected = node(0, 2, "category words 1..<2 outside 1")
        case .nanValue:
            e.values[3] = .nan
            expected = node(0, 3, "value nan is not finite")
        case .startNotZero:
            e.treeStarts[0] = 1
            expected = .badTensor(file: "t.bin", tensor: "tabular.trees", field: "values", expected: "docs/FORMAT.md section 4.5",
                                  actual: "tree 0: starts at 1, not 0")
        case .featureOutOfRange:
            e.nodes[0] = 2
            expected = node(0, 0, "feature 2 of 2")
        case .kindMismatch:
            e.nodes[3] = 3
            expected = node(0, 0, "flags 3 do not match feature 0's kind numeric")
        case .unknownFlags:
            e.nodes[3] = 5
            expected = node(0, 0, "unknown flags 5")
        case .leafWithChildren:
            e.nodes[6] = 2
            expected = node(0, 1, "a leaf with children, flags or a category offset")
        case .missingTensor, .badObjective:
            var m = e.model()
            if d == .missingTensor {
                m.tensors.removeLast()
                return (m, .badGraph(file: "t.bin", node: "tabular", field: "categoriesTensor", reason: "no stored tensor named 'tabular.categories'"))
            }
            m.metadata.tabular?.objective = "poisson"
            return (m, .badGraph(file: "t.bin", node: "tabular", field: "objective", reason: "'poisson'; expected binary, multiclass or regression"))
        }
        return (e.model(), expected)
    }

    @Test(arguments: Damage.allCases) func damagedTablesAreRefused(_ d: Damage) throws {
        let (model, expected) = Self.damaged(d)
        // The writer refuses it, and so does the reader of the same bytes written without the check.
        #expect(throws: expected) { _ = try ModelFile.serialize(model, asWrittenTo: "t.bin") }
    }
}

/// The threaded, pointer-walking prediction against the plain traversal (`leafValue`) on a real model.
@Suite struct PredictionKernelTests {
    @Test func fastScoresEqualTheReferenceTraversal() throws {
        guard let s = try BoostedTreeTests.load("spam", target: "type") else { return }
        let e = BoostedTreeTests.fit(s).ensemble
        var reference = [Float](repeating: e.baseScores[0], count: s.test.rowCount)
        for r in 0..<s.test.rowCount { for t in 0..<e.treeCount { reference[r] += e.leafValue(t) { s.test.columns[$0][r] } } }
        for threads in [1, 3] { #expect(e.scores(s.test, threads: threads) == reference, "threads \(threads)") }
        let tree = TreeFileTests.ensemble()
        let m = FeatureMatrix(rowCount: 3, columns: [[1, 2, 2], [2, 2, 1]])
        let plain = (0..<3).map { r in (0..<2).reduce(tree.baseScores[0]) { $0 + tree.leafValue($1) { m.columns[$0][r] } } }
        #expect(tree.scores(m, threads: 2) == plain)
    }
}
