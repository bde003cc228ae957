import Foundation
import Testing
import MLToolCore
import MLToolFormat
import MLToolTestSupport
@testable import MLToolTabular

/// Random forests and single decision trees on real tables (datasets/tabular.sh's fixed splits), against
/// scikit-learn's RandomForest… and DecisionTree… trained in the same run on the same training rows
/// (Tests/Fixtures/tabular/sklearn_forest.py; categories as ordinal codes there, native category splits here).
@Suite struct ForestTests {
    typealias Set = BoostedTreeTests.Set

    static func fit(_ s: Set, trees: Int, tree: Bool = false, seed: UInt64 = 0, threads: Int = 2) -> TreeEnsemble {
        var p = tree ? ForestParameters.singleTree : ForestParameters()
        p.trees = tree ? 1 : trees; p.seed = seed; p.threads = threads
        return ForestTrainer(parameters: p).train(schema: s.schema, train: s.train, targets: s.trainTargets, learner: tree ? .tree : .forest)
    }

    static func rmse(_ e: TreeEnsemble, _ m: FeatureMatrix, _ y: [Float]) -> Double {
        let errors = zip(e.predict(m), y).map { Double($0) - Double($1) }
        return (errors.map { $0 * $0 }.reduce(0, +) / Double(errors.count)).squareRoot()
    }

    /// scikit-learn's test scores (accuracy or RMSE) for `seeds`, or nil (said) without scikit-learn.
    static func peer(_ set: String, _ target: String, model: String, trees: Int = 100, seeds: [Int] = [0]) throws -> [Double]? {
        let reply = try JSONOracle.call("Tests/Fixtures/tabular/sklearn_forest.py",
                                        ["dir": BoostedTreeTests.root + "/" + set, "target": target, "model": model, "trees": trees,
                                         "seeds": seeds, "threads": 2], missing: "scikit-learn (pip install scikit-learn)")
        return reply?["scores"] as? [Double]
    }

    @Test func letterForestMatchesScikitLearn() throws {
        guard let s = try BoostedTreeTests.load("letter", target: "lettr"),
              let theirs = try Self.peer("letter", "lettr", model: "forest", trees: 30) else { return }
        let e = Self.fit(s, trees: 30)
        let ours = BoostedTreeTests.accuracy(e, s.test, s.testTargets)
        print("letter forest, 30 trees: mltool \(ours), scikit-learn \(theirs)")
        #expect(e.learner == .forest && e.treeCount == 30 * 26)
        // Measured 0.9564 (3814 of 3988) against scikit-learn's 0.9536 on this 2-core machine; the margin is 25 rows.
        #expect(ours >= theirs[0] - 0.01 && ours >= 0.950, "letter forest accuracy \(ours), scikit-learn \(theirs)")
    }

    @Test func pimaForestWithMissingValues() throws {
        guard let s = try BoostedTreeTests.load("pima", target: "diabetes"),
              let theirs = try Self.peer("pima", "diabetes", model: "forest") else { return }
        let e = Self.fit(s, trees: 100)
        let ours = BoostedTreeTests.accuracy(e, s.test, s.testTargets)
        print("pima forest, 100 trees: mltool \(ours), scikit-learn \(theirs)")
        // Measured 0.8613 (118 of 137) against scikit-learn's 0.8394; the margin is 3 rows.
        #expect(ours >= theirs[0] - 0.03 && ours >= 0.839, "pima forest accuracy \(ours), scikit-learn \(theirs)")
    }

    @Test func diamondsForestMatchesScikitLearn() throws {
        guard let s = try BoostedTreeTests.load("diamonds", target: "price"),
              let theirs = try Self.peer("diamonds", "price", model: "forest", trees: 10) else { return }
        let e = Self.fit(s, trees: 10)
        let ours = Self.rmse(e, s.test, s.testTargets)
        print("diamonds forest, 10 trees: mltool RMSE \(ours), scikit-learn \(theirs)")
        // Measured 608.7 against scikit-learn's 594.5: 255 quantile bins against its exact thresholds on carat, x, y, z.
        #expect(ours <= theirs[0] * 1.05 && ours <= 620, "diamonds forest RMSE \(ours), scikit-learn \(theirs)")
    }

    @Test func singleTreesMatchScikitLearn() throws {
        guard let l = try BoostedTreeTests.load("letter", target: "lettr"), let d = try BoostedTreeTests.load("diamonds", target: "price"),
              let theirLetter = try Self.peer("letter", "lettr", model: "tree"),
              let theirDiamonds = try Self.peer("diamonds", "price", model: "tree") else { return }
        let a = BoostedTreeTests.accuracy(Self.fit(l, trees: 1, tree: true), l.test, l.testTargets)
        let r = Self.rmse(Self.fit(d, trees: 1, tree: true), d.test, d.testTargets)
        print("single tree: letter accuracy mltool \(a), scikit-learn \(theirLetter); diamonds RMSE mltool \(r), scikit-learn \(theirDiamonds)")
        // Measured: letter 0.8588 against 0.8696 (the margin 20 rows), diamonds RMSE 777.4 against 768.0.
        #expect(a >= theirLetter[0] - 0.02 && a >= 0.853, "letter tree accuracy \(a), scikit-learn \(theirLetter)")
        #expect(r <= theirDiamonds[0] * 1.05 && r <= 790, "diamonds tree RMSE \(r), scikit-learn \(theirDiamonds)")
    }

    @Test func sameSeedSameBytesForAnyThreadCount() throws {
        guard let s = try BoostedTreeTests.load("pima", target: "diabetes") else { return }
        let one = try ModelFile.serialize(Self.fit(s, trees: 20, threads: 1).model())
        let two = try ModelFile.serialize(Self.fit(s, trees: 20, threads: 2).model())
        let other = try ModelFile.serialize(Self.fit(s, trees: 20, seed: 1, threads: 2).model())
        #expect(one == two && one != other)
        let back = try TreeEnsemble(model: try ModelFile.read(bytes: two, name: "pima.bin"))
        #expect(back.learner == .forest && back.predict(s.test) == Self.fit(s, trees: 20, threads: 3).predict(s.test))
    }

    /// The learner field is checked by the format's reader: a "tree" holds K trees, and only the four names exist.
    @Test func learnerFieldIsValidated() throws {
        guard let s = try BoostedTreeTests.load("pima", target: "diabetes") else { return }
        var model = Self.fit(s, trees: 2).model()
        model.metadata.tabular?.learner = "tree"
        #expect(throws: FormatError.badGraph(file: "m.bin", node: "tabular", field: "learner", reason: "'tree' with other than 1 tree (one per score)")) {
            _ = try ModelFile.serialize(model, asWrittenTo: "m.bin")
        }
        model.metadata.tabular?.learner = "bagged"
        #expect(throws: FormatError.badGraph(file: "m.bin", node: "tabular", field: "learner", reason: "'bagged'; expected boosted, forest, tree or linear")) {
            _ = try ModelFile.serialize(model, asWrittenTo: "m.bin")
        }
    }
}
