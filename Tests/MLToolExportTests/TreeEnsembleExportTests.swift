import Foundation
import MLToolCore
@testable import MLToolExport
import MLToolTabular
import MLToolTestSupport
import Testing

/// Tabular models exported as tree ensembles, run by their runtimes' tools on the real tables of datasets/tabular.sh:
/// onnxruntime runs the ONNX-ML file on the test split and must give mltool's classes and, within 1e-5, its
/// probabilities (or, relative, its predictions).
@Suite struct TreeEnsembleExportTests {
    struct Case: Sendable, CustomStringConvertible {
        var name: String, target: String
        /// Every feature read as categorical (dna's 180 indicator columns).
        var allCategorical = false
        /// Rounds at most: enough trees to exercise the export, few enough to keep the suite cheap.
        var iterations: Int
        var description: String { name }
    }

    static let cases = [
        Case(name: "pima", target: "diabetes", iterations: 100),
        Case(name: "dna", target: "Class", allCategorical: true, iterations: 30),
        Case(name: "diamonds", target: "price", iterations: 60),
        Case(name: "letter", target: "lettr", iterations: 15),
    ]

    /// The training and test rows of a set, or nil (said) when `bash datasets/tabular.sh` has not run.
    static func load(_ c: Case) throws -> (TabularSchema, train: FeatureMatrix, targets: [Float], test: FeatureMatrix)? {
        let dir = Paths.root.appendingPathComponent("datasets/tabular/" + c.name).path
        guard FileManager.default.fileExists(atPath: dir + "/test.csv") else {
            skip("\(dir) is missing: run bash datasets/tabular.sh (make test does)")
            return nil
        }
        let train = try RawTable.read(dir + "/train.csv")
        let categorical = c.allCategorical ? Set(train.header.filter { $0 != c.target }) : []
        let schema = try TabularSchema.infer(train, target: c.target, categorical: categorical)
        let test = try RawTable.read(dir + "/test.csv")
        return (schema, try FeatureMatrix(table: train, features: schema.features), try schema.targets(of: train),
                try FeatureMatrix(table: test, features: schema.features))
    }

    static func train(_ c: Case) throws -> (TreeEnsemble, test: FeatureMatrix)? {
        guard let (schema, train, targets, test) = try load(c) else { return nil }
        var p = BoostedTreeParameters()
        p.iterations = c.iterations
        p.threads = 2
        let e = BoostedTreeTrainer(parameters: p).train(schema: schema, train: train, targets: targets, validation: nil).ensemble
        // What the sets exercise: pima's missing values take the left way at some splits, dna's and diamonds' splits
        // are on categories (diamonds': sets of two or more categories, with two or more left out).
        let splits = (0..<e.values.count).filter { e.nodes[$0 * 5] >= 0 }
        let categorical = splits.filter { e.nodes[$0 * 5 + 3] & 2 != 0 }
        let sets = categorical.filter { i in
            let count = e.features[Int(e.nodes[i * 5])].categories?.count ?? 0, offset = Int(e.nodes[i * 5 + 4])
            let inSet = (0..<count).filter { e.categoryWords[offset + $0 >> 5] >> UInt32($0 & 31) & 1 != 0 }.count
            return inSet >= 2 && count - inSet >= 2
        }
        switch c.name {
        case "pima": #expect(splits.contains { e.nodes[$0 * 5 + 3] & 1 != 0 }, "no pima split sends missing values left")
        case "dna": #expect(!categorical.isEmpty, "no categorical split in dna")
        case "diamonds": #expect(!sets.isEmpty, "no diamonds split on a set of categories")
        default: break
        }
        return (e, test)
    }

    /// Runs `script` (MODEL FEATURES.npy OUTPUT.npy) on the exported `bytes` and the test rows; its summary and output.
    static func run(_ script: String, _ bytes: [UInt8], _ test: FeatureMatrix, features f: Int) throws -> ([String: Any], [Float])? {
        let dir = try TempDir(tag: "export-trees").url
        defer { try? FileManager.default.removeItem(at: dir) }
        let model = dir.appendingPathComponent("model"), input = dir.appendingPathComponent("x.npy"), output = dir.appendingPathComponent("y.npy")
        try Data(bytes).write(to: model)
        let n = test.rowCount
        var rows = [Float](repeating: 0, count: n * f)
        for (j, column) in test.columns.enumerated() { for r in 0..<n { rows[r * f + j] = column[r] } }
        try writeNPY(Tensor(shape: [n, f], data: rows), to: input)
        guard let text = try python(script, [model.path, input.path, output.path]) else { return nil }
        return (try json(text), try readNPYFloats(output))
    }

    /// The runtime's classes are mltool's (but at ties within `atol`) and its probabilities within `atol`; or its predictions within `rtol`
    /// (relative, at least 1 in the denominator). Returns the largest difference.
    @discardableResult
    static func expectSame(_ e: TreeEnsemble, _ test: FeatureMatrix, summary s: [String: Any], theirs: [Float], _ what: String,
                           atol: Float = 1e-5, rtol: Float = 1e-5) -> Float {
        let ours = e.predict(test), n = test.rowCount
        #expect(theirs.count == ours.count, "\(what): \(theirs.count) values, mltool \(ours.count)")
        guard theirs.count == ours.count else { return .infinity }
        if e.objective == .regression {
            assertClose(theirs, ours, rtol: Double(rtol), atol: Double(rtol), "\(what): predictions (relative, at least 1 in the denominator)")
            return Float(Closeness.ratio(theirs, ours, rtol: 1, atol: 1))   // the largest |a − b| / (1 + |b|)
        }
        let k = e.labels.count
        let labels = (0..<n).map { r -> String in
            let p = ours[(r * k)..<((r + 1) * k)]
            return e.labels[(p.indices.max { p[$0] < p[$1] } ?? r * k) - r * k]
        }
        let theirLabels = s["labels"] as? [String] ?? []
        // A row whose two most probable classes are within `atol` of each other is a tie that binary32 rounding
        // decides (averaged trees give exact ties, e.g. 0.5 of two classes): its class is not compared.
        let ties = (0..<n).filter { r in
            let p = ours[(r * k)..<((r + 1) * k)].sorted(by: >)
            return k > 1 && p[0] - p[1] <= atol
        }
        let differing = zip(theirLabels, labels).enumerated().filter { $0.element.0 != $0.element.1 && !ties.contains($0.offset) }.count
        #expect(theirLabels.count == n && differing == 0, "\(what): \(differing) of \(n) classes differ from mltool's (\(ties.count) ties not compared)")
        assertClose(theirs, ours, atol: Double(atol), "\(what): probabilities")
        return Float(Closeness.ratio(theirs, ours, atol: 1))   // the largest |a − b|
    }

    /// One model per set (training is the cost), exported both ways.
    @Test(arguments: cases)
    func runtimesGiveMLToolsPredictions(_ c: Case) throws {
        guard let (e, test) = try Self.train(c) else { return }
        let model = e.model(name: c.name)
        if let (s, theirs) = try Self.run("run_tree_onnx.py", try ONNXExporter.export(model, name: c.name).bytes, test, features: e.features.count) {
            #expect(s["input_shape"] as? [String] == ["N", "\(e.features.count)"])
            #expect((s["opsets"] as? [String: Int])?["ai.onnx.ml"] == 2)
            let metadata = s["metadata"] as? [String: String] ?? [:]
            #expect(metadata["target"] == c.target && metadata["objective"] == e.objective.rawValue)
            // Measured on Zen 4: pima 1.2e-7, dna 1.8e-7, letter 3.0e-7 (probabilities), diamonds 4.6e-7 (relative):
            // binary32 sums and onnxruntime's binary32 sigmoid and softmax.
            let worst = Self.expectSame(e, test, summary: s, theirs: theirs, "\(c.name) in onnxruntime")
            print("\(c.name): onnxruntime, \(test.rowCount) rows, \(e.treeCount) trees, largest difference \(worst)")
        }
        if let (s, theirs) = try Self.run("eval_tree_coreml.py", try CoreMLExporter.export(model, name: c.name).bytes, test, features: e.features.count) {
            #expect(s["model_type"] as? String == (e.objective == .regression ? "treeEnsembleRegressor" : "treeEnsembleClassifier"))
            #expect(s["specification_version"] as? Int == 1)
            #expect(s["input_shape"] as? [Int] == [e.features.count])
            let metadata = s["metadata"] as? [String: String] ?? [:]
            #expect(metadata["target"] == c.target && metadata["objective"] == e.objective.rawValue)
            // The spec's trees summed in binary64 by the oracle, mltool's in binary32. Measured on Zen 4: pima 1.2e-7,
            // dna 2.4e-7, letter 4.2e-7 (probabilities), diamonds 9.0e-7 (relative).
            let worst = Self.expectSame(e, test, summary: s, theirs: theirs, "\(c.name) by the Core ML spec's trees")
            print("\(c.name): Core ML spec, \(test.rowCount) rows, \(e.treeCount) trees, largest difference \(worst)")
        }
    }

    /// Ten trees, each one split of a 100-category feature sending categories 0…49 left.
    static func categoricalEnsemble() -> TreeEnsemble {
        var e = TreeEnsemble(objective: .regression, target: "y", labels: [],
                             features: [.init(name: "c", kind: .categorical, categories: (0..<100).map { "c\($0)" })], baseScores: [0])
        for t in 0..<10 {
            e.nodes += [0, 1, 2, 2, Int32(4 * t), -1, -1, -1, 0, 0, -1, -1, -1, 0, 0]
            e.values += [0, 1, -1]
            e.categoryWords += [0xFFFF_FFFF, (1 << 18) - 1, 0, 0]
            e.treeStarts.append(Int32(3 * (t + 1)))
        }
        return e
    }

    /// What an export cannot hold is refused by name: ONNX's look-up tables past their limit (here 500 values for
    /// 10 splits × 101 rows), Core ML's equality chains past the node limit (here 100; a tree needs 101: 50 tests,
    /// 50 copies of the left leaf, the right leaf). Within the limits, the chains are that long.
    @Test func exportLimitsAreRefusedByName() throws {
        let e = Self.categoricalEnsemble()
        #expect(throws: ExportError.unsupported(model: "m.bin", format: "ONNX", place: "feature 'c'",
                                                reason: "its categorical splits need look-up tables of more than 500 values")) {
            try TreeNodes(e, style: .lookups, model: "m.bin", format: "ONNX", maxTableValues: 500)
        }
        #expect(throws: ExportError.unsupported(model: "m.bin", format: "Core ML", place: "tree 0",
                                                reason: "its categorical splits as equality tests need more than 100 nodes")) {
            try TreeNodes(e, style: .equalityChains, model: "m.bin", format: "Core ML", maxNodes: 100)
        }
        let chains = try TreeNodes(e, style: .equalityChains, model: "m.bin", format: "Core ML")
        #expect(chains.nodes.count == 10 * 101 && chains.nodes.filter(\.equal).count == 500)
        let lookups = try TreeNodes(e, style: .lookups, model: "m.bin", format: "ONNX")
        #expect(lookups.nodes.count == 30 && lookups.width == 11 && lookups.lookups.first?.table.count == 101 * 10)
        #expect(try !ONNXExporter.export(e.model(), name: "m.bin").bytes.isEmpty)
        #expect(try !CoreMLExporter.export(e.model(), name: "m.bin").bytes.isEmpty)
    }

    @Test func tfliteRefusesATreeEnsemble() throws {
        let e = TreeEnsemble(objective: .regression, target: "y", labels: [], features: [.init(name: "x", kind: .numeric)], baseScores: [0])
        #expect(throws: ExportError.unsupported(model: "m.bin", format: "TensorFlow Lite", place: "tree ensemble",
                                                reason: "TensorFlow Lite has no tree-ensemble model; export a tabular model with --to onnx or --to coreml")) {
            try TFLiteExporter.export(e.model(), name: "m.bin", shapes: [:])
        }
    }
}

/// Averaged trees (forests) exported: post_transform NONE / NoTransform, the leaves already divided by the tree
/// count. Depth 8 at most (--max-depth; grown to purity the Core ML spec's Python evaluator spends ~20 s per set). Letter (26 classes, 5 trees), pima (two classes, 7 trees: one score in ONNX, two in Core ML, docs/FORMAT.md
/// 4.5) and diamonds (regression, 3 trees).
@Suite struct ForestExportTests {
    static func forest(_ c: TreeEnsembleExportTests.Case, trees: Int) throws -> (TreeEnsemble, test: FeatureMatrix)? {
        guard let (schema, train, targets, test) = try TreeEnsembleExportTests.load(c) else { return nil }
        var p = ForestParameters()
        p.trees = trees; p.threads = 2; p.maxDepth = 8
        let e = ForestTrainer(parameters: p).train(schema: schema, train: train, targets: targets)
        // A tree of depth ≤ 8 has at most 2⁹ − 1 nodes.
        let sizes = (0..<e.treeCount).map { e.treeStarts[$0 + 1] - e.treeStarts[$0] }
        #expect(sizes.allSatisfy { $0 <= 511 } && sizes.contains { $0 > 63 }, "\(c.name): tree sizes \(sizes.prefix(10))")
        return (e, test)
    }

    @Test(arguments: [(TreeEnsembleExportTests.cases[3], 5), (TreeEnsembleExportTests.cases[0], 7), (TreeEnsembleExportTests.cases[2], 3)])
    func runtimesGiveMLToolsPredictions(_ c: TreeEnsembleExportTests.Case, trees: Int) throws {
        guard let (e, test) = try Self.forest(c, trees: trees) else { return }
        let model = e.model(name: c.name), f = e.features.count
        if let (s, theirs) = try TreeEnsembleExportTests.run("run_tree_onnx.py", try ONNXExporter.export(model, name: c.name).bytes, test, features: f) {
            let worst = TreeEnsembleExportTests.expectSame(e, test, summary: s, theirs: theirs, "\(c.name) forest in onnxruntime")
            print("\(c.name) forest: onnxruntime, \(test.rowCount) rows, \(e.treeCount) trees, largest difference \(worst)")
        }
        if let (s, theirs) = try TreeEnsembleExportTests.run("eval_tree_coreml.py", try CoreMLExporter.export(model, name: c.name).bytes, test, features: f) {
            let worst = TreeEnsembleExportTests.expectSame(e, test, summary: s, theirs: theirs, "\(c.name) forest by the Core ML spec's trees")
            print("\(c.name) forest: Core ML spec, \(test.rowCount) rows, \(e.treeCount) trees, largest difference \(worst)")
        }
    }
}

/// Linear models exported to ONNX (`LinearClassifier` / `LinearRegressor` after the derived columns as plain ops), run
/// by onnxruntime, and to Core ML (a pipeline ending in a GLM), evaluated from its spec, on the test split: pima (two
/// classes, missing values), dna (three classes, 180 categorical columns), diamonds (regression, three categorical
/// columns) and letter (26 classes). Each fit takes under a second.
@Suite struct LinearExportTests {
    @Test(arguments: TreeEnsembleExportTests.cases)
    func onnxruntimeGivesMLToolsPredictions(_ c: TreeEnsembleExportTests.Case) throws {
        guard let (schema, train, targets, test) = try TreeEnsembleExportTests.load(c) else { return }
        let e = try LinearTrainer().train(schema: schema, train: train, targets: targets)
        guard let (s, theirs) = try TreeEnsembleExportTests.run("run_tree_onnx.py", try ONNXExporter.export(e.model(name: c.name), name: c.name).bytes,
                                                                test, features: e.features.count) else { return }
        #expect((s["ops"] as? [String])?.contains(e.objective == .regression ? "LinearRegressor" : "LinearClassifier") == true, "\(s["ops"] ?? "")")
        // Measured on this 2-core machine: pima 6.0e-8, dna 1.3e-6, letter 9.5e-7 (probabilities); diamonds 2.7e-4
        // relative to 1 + |prediction| (0.0011 at most in prices to 18,823: onnxruntime sums the 26 terms in binary32,
        // mltool in binary64, and they cancel to small prices), so diamonds is held to 5e-4.
        let worst = TreeEnsembleExportTests.expectSame(e, test, summary: s, theirs: theirs, "\(c.name) linear in onnxruntime",
                                                       rtol: e.objective == .regression ? 5e-4 : 1e-5)
        print("\(c.name): linear model in onnxruntime, \(test.rowCount) rows, largest difference \(worst)")
    }

    /// The Core ML pipeline (imputer, trees of the missing and one-hot terms, vectorizer, GLM) evaluated by the spec
    /// with numpy (eval_glm_coreml.py).
    @Test(arguments: TreeEnsembleExportTests.cases)
    func coreMLSpecGivesMLToolsPredictions(_ c: TreeEnsembleExportTests.Case) throws {
        guard let (schema, train, targets, test) = try TreeEnsembleExportTests.load(c) else { return }
        let e = try LinearTrainer().train(schema: schema, train: train, targets: targets)
        guard let (s, theirs) = try TreeEnsembleExportTests.run("eval_glm_coreml.py", try CoreMLExporter.export(e.model(name: c.name), name: c.name).bytes,
                                                                test, features: e.features.count) else { return }
        let regression = e.objective == .regression
        #expect(s["model_type"] as? String == (regression ? "pipelineRegressor" : "pipelineClassifier"))
        #expect(s["stages"] as? [String] == ["imputer", "treeEnsembleRegressor", "featureVectorizer", regression ? "glmRegressor" : "glmClassifier"])
        #expect(s["specification_version"] as? Int == 1)
        #expect(s["input_shape"] as? [Int] == [e.features.count])
        let metadata = s["metadata"] as? [String: String] ?? [:]
        #expect(metadata["target"] == c.target && metadata["objective"] == e.objective.rawValue)
        let worst = TreeEnsembleExportTests.expectSame(e, test, summary: s, theirs: theirs, "\(c.name) linear by the Core ML spec")
        print("\(c.name): linear model by the Core ML spec, \(test.rowCount) rows, largest difference \(worst)")
    }
}
