import Foundation
import Testing
import MLToolCore
import MLToolFormat
@testable import MLToolTabular

/// Multiclass forests stored as shared trees (docs/FORMAT.md 4.5, "Shared multiclass trees"): each round's tree once,
/// with a [L, K] table of leaf values. Both encodings read back to trees that predict bit for bit alike.
@Suite struct SharedTreesTests {
    /// Three classes, two rounds of averaged trees as the trainer lays them out (each copy of a categorical split with
    /// its own category words): round 0 splits x ≤ 0.5, round 1 sends categories {0, 2} of c left, missing right.
    static func forest() -> TreeEnsemble {
        let features: [TabularConfig.Feature] = [.init(name: "x", kind: .numeric), .init(name: "c", kind: .categorical, categories: ["a", "b", "c"])]
        var e = TreeEnsemble(objective: .multiclass, target: "y", labels: ["p", "q", "r"], features: features, baseScores: [0, 0, 0])
        e.learner = .forest
        for round in 0..<2 {
            for k in 0..<3 {
                let categorical = round == 1
                e.nodes += [Int32(round), 1, 2, categorical ? 2 : 0, categorical ? Int32(e.categoryWords.count) : 0,
                            -1, -1, -1, 0, 0, -1, -1, -1, 0, 0]
                if categorical { e.categoryWords.append(0b101) }
                e.values += [categorical ? 0 : 0.5, Float(k + 1) / 12 + Float(round) / 7, Float(3 - k) / 12 - Float(round) / 9]
                e.treeStarts.append(Int32(e.values.count))
            }
        }
        return e
    }

    static let rows = FeatureMatrix(rowCount: 5, columns: [[0.2, 0.9, .nan, 0.5, 3], [0, 1, 2, .nan, 1]])

    @Test func roundTripSharesTheTreesAndPredictsAlike() throws {
        let e = Self.forest()
        let bytes = try ModelFile.serialize(e.model())
        let m = try ModelFile.read(bytes: bytes, name: "f.bin")
        #expect(m.metadata.tabular?.leafValuesTensor == "tabular.leafValues")
        #expect(m.tensor(named: "tabular.trees")?.shape == [3] && m.tensor(named: "tabular.leafValues")?.shape == [4, 3])
        #expect(m.tensor(named: "tabular.categories")?.shape == [1])
        let back = try TreeEnsemble(model: m)
        #expect(back.treeCount == 6 && back.values == e.values && back.nodes.count == e.nodes.count)
        #expect(back.predict(Self.rows) == e.predict(Self.rows))
        // Written again, the read-back trees give the same bytes; the unshared encoding reads back alike too.
        #expect(try ModelFile.serialize(back.model()) == bytes)
        let every = try ModelFile.read(bytes: try ModelFile.serialize(e.model(name: nil, metrics: [:], provenance: Provenance(), sharing: false)), name: "e.bin")
        #expect(every.metadata.tabular?.leafValuesTensor == nil)
        #expect(try TreeEnsemble(model: every).predict(Self.rows) == e.predict(Self.rows))
    }

    @Test func treesThatDifferAreStoredEach() throws {
        var e = Self.forest()
        e.values[3] = 0.25   // round 0, class 1's threshold
        #expect(e.sharedTrees() == nil)
        let m = try ModelFile.read(bytes: try ModelFile.serialize(e.model()), name: "f.bin")
        #expect(m.metadata.tabular?.leafValuesTensor == nil)
        #expect(try TreeEnsemble(model: m).predict(Self.rows) == e.predict(Self.rows))
        var boosted = Self.forest()
        boosted.learner = .boosted
        #expect(boosted.sharedTrees() == nil)
    }

    enum Damage: CaseIterable { case storedLeafNotZero, wrongShape, notFinite, boostedLearner, missingTensor }

    @Test(arguments: Damage.allCases) func damagedSharedTablesAreRefused(_ d: Damage) throws {
        var m = Self.forest().model()
        let leaves = m.tensors.count - 1, values = try #require(m.tensors.firstIndex { $0.name == "tabular.values" })
        let expected: FormatError
        switch d {
        case .storedLeafNotZero:
            var v = try m.tensors[values].floats()
            v[1] = 0.5
            m.tensors[values] = StoredTensor(name: "tabular.values", tensor: Tensor(shape: [v.count], data: v))
            expected = .badTensor(file: "f.bin", tensor: "tabular.values", field: "values", expected: "0 at the leaves of shared trees",
                                  actual: "tree 0, node 1: 0.5")
        case .wrongShape, .notFinite:
            var v = try m.tensors[leaves].floats()
            if d == .notFinite { v[7] = .infinity } else { v.removeLast(3) }
            m.tensors[leaves] = StoredTensor(name: "tabular.leafValues", tensor: Tensor(shape: [v.count / 3, 3], data: v))
            expected = d == .notFinite
                ? .badTensor(file: "f.bin", tensor: "tabular.leafValues", field: "values", expected: "finite", actual: "element 7: inf")
                : .badTensor(file: "f.bin", tensor: "tabular.leafValues", field: "shape", expected: "[4, 3]", actual: "[3, 3]")
        case .boostedLearner:
            m.metadata.tabular?.learner = nil
            expected = .badGraph(file: "f.bin", node: "tabular", field: "leafValuesTensor",
                                 reason: "present for learner 'boosted' and objective 'multiclass'; only multiclass forests and trees share trees")
        case .missingTensor:
            m.tensors.removeLast()
            expected = .badGraph(file: "f.bin", node: "tabular", field: "leafValuesTensor", reason: "no stored tensor named 'tabular.leafValues'")
        }
        #expect(throws: expected) { _ = try ModelFile.serialize(m, asWrittenTo: "f.bin") }
    }

    /// A real forest: letter (26 classes), 10 trees.
    @Test func letterForestFileIsSmallerAndPredictsAlike() throws {
        guard let s = try BoostedTreeTests.load("letter", target: "lettr") else { return }
        let e = ForestTests.fit(s, trees: 10)
        let shared = try ModelFile.serialize(e.model())
        let every = try ModelFile.serialize(e.model(name: nil, metrics: [:], provenance: Provenance(), sharing: false))
        let a = try TreeEnsemble(model: try ModelFile.read(bytes: shared, name: "shared.bin"))
        let b = try TreeEnsemble(model: try ModelFile.read(bytes: every, name: "every.bin"))
        let ours = e.predict(s.test)
        #expect(a.predict(s.test) == ours && b.predict(s.test) == ours)
        let ratio = Double(every.count) / Double(shared.count)
        print("letter forest, 10 trees: \(every.count) bytes every tree, \(shared.count) shared (\(ratio)×)")
        // Measured on this 2-core Zen 4: 23,847,632 bytes every tree, 2,907,152 shared (8.20×): 26 copies of ~3,300 nodes
        // of 24 bytes against one copy and ~1,650 leaves of 26 values. The fit takes ~2 s.
        #expect(ratio >= 8.0, "letter forest: \(every.count) bytes every tree, \(shared.count) shared")
    }
}
