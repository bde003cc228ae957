import Foundation
import MLToolCore
import MLToolEngine
import MLToolTestSupport
import Testing
@testable import MLToolImport

/// ONNX If, inlined at import: a condition folded from shape arithmetic (only the taken branch is in the graph), a
/// run-time condition on a scalar int64 input (both branches and an `ifElse` per output), nested Ifs on
/// data-dependent conditions reading tensors of the main graph and of the enclosing branch; Loop and Scan unrolled
/// (a counted loop with a scan output, a backwards Scan along axis 1); an If whose branches differ in rank (the graph
/// after it converted once per branch); and the files the importer refuses. Fixtures and onnxruntime's outputs come from Tests/Fixtures/onnx/make_control.py (committed:
/// no Python at test time).
@Suite struct ONNXControlFlowTests {
    struct Manifest: Decodable { let onnxruntime: String; let opset: Int; let cases: [ONNXFixtures.Case] }

    static func manifest() throws -> Manifest {
        let data = try Data(contentsOf: URL(fileURLWithPath: ONNXFixtures.path("control/manifest.json")))
        return try JSONDecoder().decode(Manifest.self, from: data)
    }

    static func model(_ name: String) throws -> Model {
        try ONNXImporter.importModel(path: ONNXFixtures.path("control/\(name).onnx"), options: ImportOptions())
    }

    /// The cases of `model` in the manifest (one per input set).
    static func cases(_ model: String) throws -> [ONNXFixtures.Case] {
        try manifest().cases.filter { $0.model == model + ".onnx" }
    }

    /// Runs every case of `name` on the reference kernels and on the fast path, against onnxruntime's outputs.
    static func check(_ name: String, count: Int) throws {
        let imported = try model(name)
        let cases = try cases(name)
        #expect(cases.count == count)
        for mode in [Engine.Mode.reference, .fast] {
            let engine = try Engine(model: imported, threads: 2, mode: mode)
            for (k, c) in cases.enumerated() {
                var feeds: [String: Tensor] = [:]
                for i in c.inputs { feeds[i.name] = ONNXFixtures.toNHWC(try ONNXFixtures.load(i, under: "control")) }
                let got = try engine.run(feeds, outputs: c.outputs.map(\.name))
                for o in c.outputs {
                    let actual = ONNXFixtures.toNCHW(try #require(got[o.name]))
                    assertClose(actual, try ONNXFixtures.load(o, under: "control"), rtol: 0, atol: 1e-6, "\(name) case \(k) \(mode) '\(o.name)'")
                }
            }
        }
    }

    static func ops(_ m: Model) -> [Op] { m.metadata.graph?.nodes.map(\.op) ?? [] }

    @Test func constantConditionInlinesOnlyTheTakenBranch() throws {
        // Equal(Gather(Shape(x), 1), 3) folds to true: the then branch (x · w, w its own initializer) is the graph;
        // the else branch, whose Reshape could not convert, is never read.
        let m = try Self.model("if_constant")
        #expect(Self.ops(m) == [.mul])
        #expect(m.metadata.graph?.nodes.first?.name == "if_width/then/Mul_0")
        try Self.check("if_constant", count: 1)
    }

    @Test func runTimeConditionTakesEachBranch() throws {
        // Equal(sr, 16000) on the scalar int64 input: both branches are in the graph, one ifElse per If output.
        let m = try Self.model("if_runtime")
        let ifElse = m.metadata.graph?.nodes.filter { $0.op == .ifElse } ?? []
        #expect(ifElse.map(\.name) == ["if_rate.0", "if_rate.1"])
        #expect(ifElse.map(\.outputs) == [["y"], ["y4"]])
        // sr = 16000 (then: x · w, img · [2, −3] per channel) and sr = 8000 (else: x − 1, a constant NCHW tensor).
        try Self.check("if_runtime", count: 2)
    }

    @Test func integerInputRefusesOtherValues() throws {
        // sr is int64 in the file: the model records it, and the engine refuses a value int64 cannot hold.
        let m = try Self.model("if_runtime")
        #expect(m.metadata.graph?.inputs.map(\.elementType) == [nil, nil, "int64"])
        let engine = try Engine(model: m, threads: 1)
        let feeds = ["x": Tensor(shape: [2, 3], data: [Float](repeating: 1, count: 6)),
                     "img": Tensor(shape: [1, 2, 3, 2], data: [Float](repeating: 1, count: 12))]   // NHWC
        #expect(throws: EngineError.inputValue(name: "sr", expected: "int64 values (integers that int64 holds), as the model types the input",
                                               actual: "16000.5 at element 0")) {
            try engine.run(feeds.merging(["sr": Tensor(shape: [], data: [16000.5])]) { a, _ in a })
        }
        _ = try engine.run(feeds.merging(["sr": Tensor(shape: [], data: [8000])]) { a, _ in a })
    }

    @Test func nestedIfReadsOuterScopes() throws {
        // The inner If, in the outer then branch, reads h (main graph) and t (the enclosing branch).
        let m = try Self.model("if_nested")
        #expect(Self.ops(m).filter { $0 == .ifElse }.count == 2)
        try Self.check("if_nested", count: 3)
    }

    @Test func countedLoopIsUnrolled() throws {
        // M = 3, no condition: three copies of the body (v · w + i), the row sums stacked (3, 2).
        let m = try Self.model("loop_counted")
        #expect(Self.ops(m).filter { $0 == .mul }.count == 3)
        #expect(!Self.ops(m).contains(.ifElse))
        try Self.check("loop_counted", count: 1)
    }

    @Test func scanAlongAxisOneBackwardsIsUnrolled() throws {
        // Four steps over axis 1 of x (2, 4, 3), read from the last; the states stacked along axis 1 in reverse.
        let m = try Self.model("scan_axes")
        #expect(Self.ops(m).filter { $0 == .add }.count == 4)
        try Self.check("scan_axes", count: 1)
    }

    @Test func rankVaryingIfConvertsOnceForEachBranch() throws {
        // Squeeze the free last axis when it is 1, else keep it: the graph after the If converts twice (rank 2 and
        // rank 3, Flatten giving (N, 4) or (N, 4·T)), joined by one ifElse on the shape-derived condition, and
        // planning T = 1 or T = 3 runs only the variant it takes.
        let m = try Self.model("if_rank_flatten")
        let joins = m.metadata.graph?.nodes.filter { $0.op == .ifElse } ?? []
        #expect(joins.map(\.name) == ["y.variant"])
        #expect(joins.first?.inputs.count == 3)
        try Self.check("if_rank_flatten", count: 2)
    }

    @Test func rankVaryingIfKeepsTheVariantThatConverts() throws {
        // Gemm takes the squeezed (N, 4) only: the other variant does not convert, so the graph holds one and a
        // two-input ifElse refuses the shapes that would take the other (onnxruntime fails on them too).
        let m = try Self.model("if_rank_guard")
        let joins = m.metadata.graph?.nodes.filter { $0.op == .ifElse } ?? []
        #expect(joins.map(\.inputs.count) == [2])
        try Self.check("if_rank_guard", count: 1)
        let engine = try Engine(model: m, threads: 1)
        let three = Tensor(shape: [2, 4, 3], data: (0..<24).map { Float($0) })
        #expect(throws: EngineError.invalidAttribute(
            node: "y.variant", attribute: "condition",
            expected: "true for these input shapes (the graph was converted for the If branch that takes them only: the other's values do not fit the rest of the graph)",
            actual: "false")) { try engine.run(["x": three]) }
    }

    @Test func squeezeWithoutAxesOnAFreeBatch() throws {
        // Whether the free batch is 1 decides the rank: of the two variants, the one with the file's declared
        // output rank (the batch squeezed) stays, and a batch of 2 is refused when planned.
        let m = try Self.model("squeeze_free_batch")
        #expect(m.metadata.graph?.nodes.filter { $0.op == .ifElse }.map(\.inputs.count) == [2])
        try Self.check("squeeze_free_batch", count: 1)
        let engine = try Engine(model: m, threads: 1)
        #expect(throws: EngineError.self) { try engine.run(["x": Tensor(shape: [2, 1, 4], data: [Float](repeating: 1, count: 8))]) }
    }

    static func refusal(_ name: String) -> String? {
        do {
            _ = try model(name)
            return nil
        } catch let e as ImportError {
            return e.description
        } catch {
            return "\(type(of: error)): \(error)"
        }
    }

    @Test(arguments: [
        ("bad_branch_outputs", "node 'the_if' (If): expected branches with 1 output(s) each, as the node, found then_branch 1, else_branch 2"),
        ("bad_node_outputs", "node 'the_if' (If): expected branches with 2 output(s) each, as the node, found then_branch 1, else_branch 1"),
        ("bad_missing_branch", "node 'the_if' (If): expected a graph attribute 'else_branch', found none"),
        ("bad_undefined", "node 'the_if' (If) then node 'Add_0' (Add): expected 'nowhere' defined in the subgraph or an enclosing graph, found undefined tensor"),
        ("bad_loop_condition", "node 'the_loop' (Loop) body condition: expected a value known at import (the loop is unrolled), found 'cond_out', computed at run time"),
        ("bad_loop_count", "node 'the_loop' (Loop) trip count M: expected at most 4096 iterations (unrolled at import), found 5000"),
        ("bad_branch_rank", "node 'the_if' (If) (graph output 'y'): expected graph outputs of one rank whichever branch the If takes, found shapes [2, 3] and [2, 3, 1]"),
    ])
    func refusesNamingTheNode(name: String, message: String) {
        let path = ONNXFixtures.path("control/\(name).onnx")
        #expect(Self.refusal(name) == "\(path): \(message)")
    }

    /// An If on a free dimension (N == 1) imports: its condition is computed from the input's shape, and the
    /// engine decides it when it plans each size (both branches are Relu here: the value is relu(n) at every N).
    @Test(arguments: [Engine.Mode.fast, .reference])
    func conditionOnAFreeDimensionIsDecidedPerInputShape(mode: Engine.Mode) throws {
        let m = try Self.model("bad_runtime_dim")
        let nodes = try #require(m.metadata.graph?.nodes)
        #expect(nodes.contains { $0.op == .shape } && nodes.contains { $0.op == .ifElse })
        let engine = try Engine(model: m, threads: 1, mode: mode)
        for rows in [1, 3] {
            let x = Tensor(shape: [rows, 3], data: (0..<(rows * 3)).map { Float($0) - 4 })
            let y = try #require(try engine.run(["n": x])["y"])
            assertClose(y, Tensor(shape: x.shape, data: x.data.map { max($0, 0) }), rtol: 0, atol: 0, "\(mode) N = \(rows)")
        }
    }

    @Test func unsupportedOpsInsideBranchesAreNamedWithTheOthers() throws {
        let path = ONNXFixtures.path("control/bad_unsupported.onnx")
        do {
            _ = try Self.model("bad_unsupported")
            Issue.record("imported")
        } catch let ImportError.unsupported(file, ops) {
            #expect(file == path)
            #expect(ops.map(\.op) == ["Unique", "Det"])
            #expect(ops.map(\.firstNodes) == [["Unique_4"], ["Det_0"]])
        }
    }

    @Test func branchesOfDifferentShapesAreRefusedWhenPlanned() throws {
        // Import keeps the merged shape (−1 where the dims differ); the engine names the node when it plans x.
        let m = try Self.model("branch_shapes")
        #expect(Self.ops(m).contains(.ifElse))
        do {
            _ = try Engine(model: m, threads: 1).run(["x": Tensor(shape: [2, 3], data: [Float](repeating: 1, count: 6))])
            Issue.record("ran")
        } catch let e as EngineError {
            #expect(e.description == "node 'the_if': If branches: expected one shape (the condition is only known at run time), found shapes [2, 3] and [3, 2]")
        }
    }
}
