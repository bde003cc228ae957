import CMLToolKernels
import Foundation
import MLToolCore
import Testing
@testable import MLToolEngine
import MLToolFormat
import MLToolTestSupport

/// A MobileNet-style network: conv-bn-relu6 stem, inverted residual blocks (1×1 expand, depthwise, 1×1 project,
/// residual add) with standalone batchNorm and activation nodes for the passes to fold, global pool, dense, softmax.
func mobileNetLike(seed: UInt64 = 7, size: Int = 17) -> Model {
    var g = GraphBuilder(seed: seed, input: [-1, size, size, 3])
    var x = g.conv("x", cin: 3, cout: 8, k: (3, 3), stride: 2, pads: [0, 0, 1, 1], bias: false)
    x = g.node(.clip, [g.batchNorm(x, 8)], Attributes(min: 0, max: 6))
    var c = 8
    for (i, (expand, out, stride, k)) in [(4, 8, 1, 3), (3, 12, 2, 5), (2, 12, 1, 3)].enumerated() {
        let hidden = c * expand
        var h = g.conv(x, cin: c, cout: hidden, k: (1, 1), bias: false)
        h = g.node(.clip, [g.batchNorm(h, hidden)], Attributes(min: 0, max: 6))
        let p = k / 2
        h = g.conv(h, cin: hidden, cout: hidden, k: (k, k), stride: stride, pads: stride == 2 ? [p - 1, p - 1, p, p] : [p, p, p, p], groups: hidden, bias: false)
        h = g.node(.relu, [g.batchNorm(h, hidden)])
        h = g.node(.identity, [h], name: "dropout\(i)")
        h = g.batchNorm(g.conv(h, cin: hidden, cout: out, k: (1, 1), bias: true), out)
        x = stride == 1 && out == c ? g.node(.add, [x, h]) : h
        c = out
    }
    x = g.node(.clip, [g.batchNorm(g.conv(x, cin: c, cout: 32, k: (1, 1)), 32)], Attributes(min: 0, max: 6))
    let pooled = g.node(.globalAvgPool, [x], name: "pool")
    let flat = g.node(.flatten, [pooled], name: "features")
    let logits = g.dense(flat, 32, 10)
    let probs = g.node(.softmax, [logits], name: "probs")
    return g.model(outputs: [probs])
}

@Suite struct EngineTests {
    @Test func mobileNetFastMatchesReference() throws {
        let model = mobileNetLike()
        var rng = GraphBuilder(seed: 99, input: [])
        let input = rng.input([3, 17, 17, 3])
        for threads in [1, 2] {
            let (fast, ref) = try bothModes(model, ["x": input], threads: threads)
            let f = try #require(fast["probs:0"]), r = try #require(ref["probs:0"])
            #expect(f.shape == [3, 10])
            assertClose(f, r, rtol: fastTolerance, atol: fastTolerance)
            for row in 0..<3 { #expect(abs(r.data[row * 10..<row * 10 + 10].reduce(0, +) - 1) < 1e-5) }
        }
    }

    @Test func passesShrinkTheGraphAndKeepOutputs() throws {
        let model = mobileNetLike()
        let optimized = try GraphPasses.optimize(model)
        let before = model.metadata.graph!.nodes, after = optimized.metadata.graph!.nodes
        #expect(!after.contains { [.batchNorm, .identity, .clip, .relu].contains($0.op) })
        #expect(after.count < before.count)
        #expect(after.filter { $0.op == .conv }.count == before.filter { $0.op == .conv }.count)
        // Folded weights replace the originals; no tensor is left behind unused.
        let used = Set(after.flatMap(\.inputs))
        #expect(optimized.tensors.allSatisfy { used.contains($0.name) })
        var rng = GraphBuilder(seed: 5, input: [])
        let input = rng.input([2, 17, 17, 3])
        let a = try Engine(model: model, mode: .reference).run(["x": input])
        let b = try Engine(model: optimized, mode: .reference).run(["x": input])
        assertClose(try #require(b["probs:0"]), try #require(a["probs:0"]), rtol: fastTolerance, atol: fastTolerance)
    }

    @Test func runsUpToAnInnerTensor() throws {
        let model = mobileNetLike()
        var rng = GraphBuilder(seed: 3, input: [])
        let input = rng.input([2, 17, 17, 3])
        let engine = try Engine(model: model, threads: 2)
        let out = try engine.run(["x": input], outputs: ["features:0", "pool:0"])
        #expect(out["features:0"]?.shape == [2, 32])
        #expect(out["pool:0"]?.shape == [2, 1, 1, 32])
        let ref = try Engine(model: model, mode: .reference).run(["x": input], outputs: ["features:0"])
        assertClose(try #require(out["features:0"]), try #require(ref["features:0"]), rtol: fastTolerance, atol: fastTolerance)
        // A tensor the passes fused away (the conv output before its batchNorm) is still reachable.
        let stem = model.metadata.graph!.nodes[0].outputs[0]
        let inner = try engine.run(["x": input], outputs: [stem])
        let innerRef = try Engine(model: model, mode: .reference).run(["x": input], outputs: [stem])
        assertClose(try #require(inner[stem]), try #require(innerRef[stem]), rtol: fastTolerance, atol: fastTolerance)
        #expect(throws: EngineError.unknownOutput(name: "nope")) { try engine.run(["x": input], outputs: ["nope"]) }
    }

    @Test func batchEqualsImageByImageAndIsDeterministic() throws {
        try checkBatch()
    }

    func checkBatch() throws {
        let model = mobileNetLike()
        var rng = GraphBuilder(seed: 11, input: [])
        let input = rng.input([5, 17, 17, 3])
        let engine = try Engine(model: model, threads: 2)
        let all = try #require(try engine.run(["x": input])["probs:0"])
        #expect(try engine.run(["x": input])["probs:0"] == all)
        for i in 0..<5 {
            let one = Tensor(shape: [1, 17, 17, 3], data: Array(input.data[i * 867..<(i + 1) * 867]))
            let y = try #require(try engine.run(["x": one])["probs:0"])
            assertClose(y, Tensor(shape: [1, 10], data: Array(all.data[i * 10..<i * 10 + 10])), rtol: fastTolerance, atol: fastTolerance)
        }
        let single = try #require(try Engine(model: model, threads: 1).run(["x": input])["probs:0"])
        #expect(single == all)
    }

    @Test func inputShapeAndNames() throws {
        let engine = try Engine(model: mobileNetLike())
        #expect(engine.inputNames == ["x"])
        #expect(engine.outputNames == ["probs:0"])
        #expect(engine.inputShape("x", batch: 32) == [32, 17, 17, 3])
        #expect(engine.inputShape("y", batch: 1) == nil)
    }

    /// Shape inference alone gives the shapes a run produces.
    @Test func outputShapesWithoutRunning() throws {
        let model = mobileNetLike()
        let engine = try Engine(model: model, threads: 1)
        for batch in [1, 3] {
            let input = Tensor(zeros: try #require(engine.inputShape("x", batch: batch)))
            let ran = try engine.run(["x": input]).mapValues(\.shape)
            #expect(try Engine.outputShapes(model: model, batch: batch) == ran)
            #expect(ran == ["probs:0": [batch, 10]])
        }
        #expect(throws: EngineError.noGraph) {
            try Engine.outputShapes(model: Model(metadata: ModelMetadata(task: .textClassifier), tensors: []))
        }
    }

    @Test func badRunInputs() throws {
        let engine = try Engine(model: mobileNetLike())
        #expect(throws: EngineError.missingInput(name: "x")) { try engine.run([:]) }
        #expect(throws: EngineError.inputShape(name: "x", expected: [-1, 17, 17, 3], actual: [1, 17, 16, 3])) {
            try engine.run(["x": Tensor(zeros: [1, 17, 16, 3])])
        }
        #expect(throws: EngineError.unknownInput(name: "z")) {
            try engine.run(["x": Tensor(zeros: [1, 17, 17, 3]), "z": Tensor(zeros: [1])])
        }
    }
}

/// Invalid graphs: each error names the node and the problem.
@Suite struct ValidationTests {
    func engineError(_ build: (inout GraphBuilder) -> String) -> EngineError? {
        var g = GraphBuilder(seed: 1, input: [-1, 5, 5, 4])
        let out = build(&g)
        do { _ = try Engine(model: g.model(outputs: [out])); return nil } catch let e as EngineError { return e } catch { return nil }
    }

    @Test func unknownTensor() {
        #expect(engineError { $0.node(.add, ["x", "ghost"], name: "sum") } == .unknownTensor(node: "sum", tensor: "ghost"))
    }

    /// A node output that reuses the name of a graph input, a model tensor or another node's output is refused
    /// (it would share that value's storage), naming the node and the output.
    @Test func outputsThatReuseANameAreRefused() {
        func refused(_ e: EngineError?, _ node: String, _ name: String) -> Bool {
            if case let .invalidAttribute(n, attribute, _, _)? = e { return n == node && attribute == "output '\(name)'" }
            return false
        }
        let asInput = engineError { g in
            g.nodes.append(Node(name: "r", op: .relu, inputs: ["x"], outputs: ["x"], attributes: Attributes()))
            return g.node(.relu, ["x"])
        }
        #expect(refused(asInput, "r", "x"), "\(String(describing: asInput))")
        let twice = engineError { g in
            let a = g.node(.relu, ["x"], name: "a")
            g.nodes.append(Node(name: "b", op: .sigmoid, inputs: ["x"], outputs: [a], attributes: Attributes()))
            return g.node(.add, [a, "x"])
        }
        #expect(refused(twice, "b", "a:0"), "\(String(describing: twice))")
        let asTensor = engineError { g in
            let t = g.constant([4])
            let sum = g.node(.add, ["x", t])
            g.nodes.append(Node(name: "c", op: .relu, inputs: [sum], outputs: [t], attributes: Attributes()))
            return g.node(.add, [sum, t])
        }
        #expect(refused(asTensor, "c", "t1"), "\(String(describing: asTensor))")
    }

    @Test func missingAttribute() {
        #expect(engineError { $0.node(.maxPool, ["x"], name: "pool") } == .missingAttribute(node: "pool", op: "maxPool", attribute: "kernel"))
        #expect(engineError { $0.node(.reshape, ["x"], name: "r") } == .missingAttribute(node: "r", op: "reshape", attribute: "shape"))
    }

    @Test func shapeErrors() {
        let e = engineError { $0.conv("x", cin: 3, cout: 8, k: (3, 3)) }
        #expect(e == .shapeMismatch(node: "conv3", what: "input", expected: "(N,H,W,3)", actual: [1, 5, 5, 4]))
        #expect(e?.description == "node 'conv3': input: shape [1, 5, 5, 4], expected (N,H,W,3)")
        let b = engineError { g in g.node(.add, ["x", g.constant([3])], name: "a") }
        #expect(b == .shapeMismatch(node: "a", what: "second input", expected: "broadcastable with [1, 5, 5, 4]", actual: [3]))
        let r = engineError { $0.node(.reshape, ["x"], Attributes(shape: [0, 7, -1]), name: "r") }
        #expect(r == .shapeMismatch(node: "r", what: "input", expected: "a multiple of 7 elements for [0, 7, -1]", actual: [1, 5, 5, 4]))
    }

    @Test func badAttributes() {
        let groups = engineError { $0.conv("x", cin: 4, cout: 6, k: (1, 1), groups: 4) }
        #expect(groups == .invalidAttribute(node: "conv3", attribute: "groups", expected: "≥ 1 dividing 6 output channels", actual: "4"))
        let pad = engineError { $0.node(.pad, ["x"], Attributes(pads: [0, 1, 0, 0, 0, 1, 0, 0], mode: "wrap"), name: "p") }
        #expect(pad == .invalidAttribute(node: "p", attribute: "mode", expected: "constant, reflect or edge", actual: "wrap"))
        let weights = engineError { $0.node(.conv, ["x", "x"], name: "c") }
        #expect(weights == .badWeights(node: "c", tensor: "x", reason: "must be a model tensor"))
    }

    @Test func hostileSizesThrowInsteadOfTrapping() {
        let r = engineError { $0.node(.reshape, ["x"], Attributes(shape: [Int.max, 4, -1]), name: "r") }
        #expect(r == .shapeMismatch(node: "r", what: "input", expected: "a shape whose size fits for [\(Int.max), 4, -1]", actual: [1, 5, 5, 4]))
        let p = engineError { $0.node(.maxPool, ["x"], Attributes(kernel: [2, 2], pads: [0, 0, Int.max, 0]), name: "p") }
        #expect(p == .invalidAttribute(node: "p", attribute: "pads", expected: "4 values in 0…1048576", actual: "[0, 0, \(Int.max), 0]"))
        let s = engineError { $0.conv("x", cin: 4, cout: 4, k: (1, 1), stride: -1) }
        #expect(s == .invalidAttribute(node: "conv3", attribute: "strides", expected: "2 values in 1…1048576", actual: "[-1, -1]"))
    }

    @Test func emptyBatch() throws {
        var g = GraphBuilder(seed: 1, input: [-1, 5, 5, 4])
        let out = g.conv("x", cin: 4, cout: 6, k: (3, 3), pads: [1, 1, 1, 1], act: .relu)
        let model = g.model(outputs: [out])
        for mode in [Engine.Mode.fast, .reference] {
            let y = try Engine(model: model, mode: mode).run(["x": Tensor(zeros: [0, 5, 5, 4])])
            #expect(y[out]?.shape == [0, 5, 5, 6])
        }
    }

    @Test func noGraph() {
        #expect(throws: EngineError.noGraph) { try Engine(model: Model(metadata: ModelMetadata(task: .textClassifier), tensors: [])) }
    }
}

/// A model whose plan fuses steps (`f`) against the same graph with the inner value also asked for, which keeps the
/// steps apart (`u`), on the batch `input` (input "x") at 1 and 2 threads: the same bits at `out`, its first image
/// alone the batch's first image's bits, and close to the reference engine.
func expectFusedBits(_ f: Model, _ u: Model, input: Tensor, _ out: String, _ label: String,
                     int8Compute: Engine.Int8Compute? = nil, tolerance: Double = fastTolerance) throws {
    let image = Array(input.shape.dropFirst()), size = input.shape.dropFirst().reduce(1, *)
    let ref = try #require(try Engine(model: f, threads: 1, mode: .reference).run(["x": input])[out])
    for threads in [1, 2] {
        let fused = try #require(try Engine(model: f, threads: threads, int8Compute: int8Compute).run(["x": input])[out])
        let unfused = try #require(try Engine(model: u, threads: threads, int8Compute: int8Compute).run(["x": input])[out])
        let differ = zip(fused.data, unfused.data).filter { $0.bitPattern != $1.bitPattern }.count
        #expect(differ == 0, "\(label), \(threads) threads: \(differ) values differ from the two steps")
        let one = Tensor(shape: [1] + image, data: Array(input.data[0..<size]))
        let single = try #require(try Engine(model: f, threads: threads, int8Compute: int8Compute).run(["x": one])[out])
        #expect(zip(single.data, fused.data).allSatisfy { $0.bitPattern == $1.bitPattern },
                "\(label), \(threads) threads: one image differs from the batch's first")
        assertClose(fused, ref, rtol: tolerance, atol: tolerance)
    }
}

/// Expand (1×1) → depthwise pairs big enough for the engine to run fused, band by band.
@Suite struct FusedExpandDepthwiseTests {
    @Test(arguments: [(64, 60, 8, 72, 3, 1, [1, 1, 1, 1]), (70, 66, 16, 64, 5, 2, [1, 2, 2, 1]), (37, 90, 12, 96, 3, 2, [0, 0, 1, 1])])
    func fusedMatchesUnfusedAndReference(_ c: (h: Int, w: Int, cin: Int, cmid: Int, k: Int, stride: Int, pads: [Int])) throws {
        var g = GraphBuilder(seed: UInt64(c.h), input: [-1, c.h, c.w, c.cin])
        let mid = g.conv("x", cin: c.cin, cout: c.cmid, k: (1, 1), act: .relu6)
        let out = g.conv(mid, cin: c.cmid, cout: c.cmid, k: (c.k, c.k), stride: c.stride, pads: c.pads, groups: c.cmid,
                         act: .relu6)
        let input = g.input([2, c.h, c.w, c.cin])
        // Asking for the expanded tensor too keeps it stored, so that plan runs the two convs one after the other.
        let fusedModel = g.model(outputs: [out]), unfusedModel = g.model(outputs: [out, mid])
        for threads in [1, 2] {
            #expect(try Self.fusedPairs(fusedModel, outputs: [out], image: [1, c.h, c.w, c.cin], threads: threads) == 1,
                    "\(c), \(threads) threads: the engine's plan does not fuse the pair")
            #expect(try Self.fusedPairs(unfusedModel, outputs: [out, mid], image: [1, c.h, c.w, c.cin], threads: threads) == 0)
        }
        try compare(c, fusedModel, unfusedModel, input, out)
        // The same with the 1×1 conv's weights int8 (int8 compute quantizes each band's rows as unfused would).
        let expand = try #require(fusedModel.metadata.graph?.nodes.first?.inputs[1])
        var qf = fusedModel, qu = unfusedModel
        qf.tensors = try qf.tensors.map { $0.name == expand ? try int8Weights($0) : $0 }
        qu.tensors = qf.tensors
        for threads in [1, 2] {
            let f = try #require(try Engine(model: qf, threads: threads, int8Compute: .all).run(["x": input])[out])
            let u = try #require(try Engine(model: qu, threads: threads, int8Compute: .all).run(["x": input])[out])
            let d = try #require(try Engine(model: qf, threads: threads, int8Compute: .off).run(["x": input])[out])
            #expect(zip(f.data, u.data).filter { $0 != $1 }.isEmpty, "\(c), int8, \(threads) threads: fused differs")
            #expect(f.data != d.data, "int8 compute did not run")
        }
    }

    /// A stem (a conv with few input channels, `Fast.isStem`) then a depthwise conv: fused where the stem runs by
    /// `mlk_conv_rows` (AVX2 and up), the same bits as the two steps, with float and palettized weights.
    @Test(arguments: [(224, 224, 3, 32, 2, [0, 0, 1, 1], 3, 1, [1, 1, 1, 1]), (150, 130, 3, 24, 1, [1, 1, 1, 1], 5, 2, [2, 2, 2, 2]),
                      (225, 201, 4, 32, 2, [1, 1, 1, 1], 3, 2, [0, 0, 1, 1])])
    func stemThenDepthwiseMatchesUnfused(_ c: (h: Int, w: Int, cin: Int, cout: Int, stride: Int, pads: [Int], k: Int,
                                               dstride: Int, dpads: [Int])) throws {
        var g = GraphBuilder(seed: UInt64(c.w), input: [-1, c.h, c.w, c.cin])
        let mid = g.conv("x", cin: c.cin, cout: c.cout, k: (3, 3), stride: c.stride, pads: c.pads, act: .relu6)
        let out = g.conv(mid, cin: c.cout, cout: c.cout, k: (c.k, c.k), stride: c.dstride, pads: c.dpads, groups: c.cout,
                         act: .relu6)
        let input = g.input([2, c.h, c.w, c.cin])
        let fusedModel = g.model(outputs: [out]), unfusedModel = g.model(outputs: [out, mid])
        let (paletteFused, _) = try PaletteTests.palettized(fusedModel)
        var paletteUnfused = unfusedModel
        paletteUnfused.tensors = paletteFused.tensors
        do {
            let stem = mlk_conv_direct_eligible(Int64(c.cin), 3, Int64(c.cout), 1, 1) != 0
            for threads in [1, 2] {
                #expect(try Self.fusedPairs(fusedModel, outputs: [out], image: [1, c.h, c.w, c.cin], threads: threads)
                        == (stem ? 1 : 0), "\(c), \(threads) threads")
                #expect(try Self.fusedPairs(unfusedModel, outputs: [out, mid], image: [1, c.h, c.w, c.cin], threads: threads) == 0)
            }
            for (f, u, what) in [(fusedModel, unfusedModel, "float"), (paletteFused, paletteUnfused, "palette")] {
                try expectFusedBits(f, u, input: input, out, "\(c), \(what)")
            }
        }
    }

    /// How many step pairs run fused in the plan the fast engine builds for `model` and `outputs` on one image (a
    /// batch of such graphs runs image by image), as `Engine.runFast` builds it.
    static func fusedPairs(_ model: Model, outputs: [String], image: [Int], threads: Int) throws -> Int {
        let optimized = try GraphPasses.optimize(model)
        let p = try Program(graph: try #require(optimized.metadata.graph), tensors: optimized.tensorsByName)
        let targets = try outputs.map { try #require(p.ids[$0], "\($0) is not in the optimized graph") }
        let plan = try Plan(program: p, inputShapes: [p.inputIds[0]: image], steps: p.needed(targets), targets: targets,
                            threads: threads)
        return plan.fused.count
    }

    func compare(_ c: (h: Int, w: Int, cin: Int, cmid: Int, k: Int, stride: Int, pads: [Int]), _ fusedModel: Model,
                 _ unfusedModel: Model, _ input: Tensor, _ out: String) throws {
        for threads in [1, 2] {
            let fused = try #require(try Engine(model: fusedModel, threads: threads).run(["x": input])[out])
            let unfused = try #require(try Engine(model: unfusedModel, threads: threads).run(["x": input])[out])
            let differ = zip(fused.data, unfused.data).enumerated().filter { $0.element.0 != $0.element.1 }.map(\.offset)
            #expect(differ.isEmpty, "\(c), \(threads) threads: \(differ.count) values differ from unfused, first at \(differ.first ?? -1) of shape \(fused.shape)")
            let one = Tensor(shape: [1, c.h, c.w, c.cin], data: Array(input.data[0..<(c.h * c.w * c.cin)]))
            let single = try #require(try Engine(model: fusedModel, threads: threads).run(["x": one])[out])
            let differ1 = zip(single.data, fused.data).filter { $0 != $1 }.count
            #expect(differ1 == 0, "\(c), \(threads) threads: batch of 1 differs from the batch's first image in \(differ1) values")
            let ref = try #require(try Engine(model: fusedModel, threads: 1, mode: .reference).run(["x": input])[out])
            assertClose(fused, ref, rtol: fastTolerance, atol: fastTolerance)
        }
    }
}

/// A value a fused pair never writes (the expansion between an expand conv and its depthwise conv; a projection whose
/// add runs in its GEMM) takes no place in the activation arena: the arena is smaller by at least its size.
@Suite struct UnwrittenValueTests {
    static func plan(_ model: Model, outputs: [String], image: [Int]) throws -> (Plan, Program) {
        let optimized = try GraphPasses.optimize(model)
        let p = try Program(graph: try #require(optimized.metadata.graph), tensors: optimized.tensorsByName)
        let targets = try outputs.map { try #require(p.ids[$0], "\($0) is not in the optimized graph") }
        return (try Plan(program: p, inputShapes: [p.inputIds[0]: image], steps: p.needed(targets), targets: targets), p)
    }

    @Test func fusedPairsLeaveTheirInnerValueWithoutAPlace() throws {
        var g = GraphBuilder(seed: 7, input: [-1, 64, 60, 8])
        let mid = g.conv("x", cin: 8, cout: 72, k: (1, 1), act: .relu6)
        let dw = g.conv(mid, cin: 72, cout: 72, k: (3, 3), pads: [1, 1, 1, 1], groups: 72, act: .relu6)
        let proj = g.conv(dw, cin: 72, cout: 8, k: (1, 1))
        let out = g.node(.add, [proj, "x"])
        let image = [1, 64, 60, 8]
        let (fused, fp) = try Self.plan(g.model(outputs: [out]), outputs: [out], image: image)
        #expect(fused.fused.count == 1 && fused.residual.compactMap { $0 }.count == 1, "both pairs fuse")
        let midId = try #require(fp.ids[mid]), projId = try #require(fp.ids[proj])
        #expect(fused.offset[midId] == nil, "the expansion has a place")
        #expect(fused.offset[projId] == nil, "the projection's output has a place")
        // Asking for both values keeps them stored: their places come back, and the arena grows by at least the
        // expansion (64 × 60 × 72 floats).
        let (unfused, up) = try Self.plan(g.model(outputs: [out, mid, proj]), outputs: [out, mid, proj], image: image)
        let (upMid, upProj) = (try #require(up.ids[mid]), try #require(up.ids[proj]))
        #expect(unfused.offset[upMid] != nil && unfused.offset[upProj] != nil)
        let grown = unfused.arenaFloats - fused.arenaFloats
        #expect(grown >= 64 * 60 * 72, "arena \(fused.arenaFloats) floats fused vs \(unfused.arenaFloats) unfused")
        // And the fused plan runs to the unfused plan's bits.
        let input = g.input([1, 64, 60, 8])
        for threads in [1, 2] {
            let f = try #require(try Engine(model: g.model(outputs: [out]), threads: threads).run(["x": input])[out])
            let u = try #require(try Engine(model: g.model(outputs: [out, mid, proj]), threads: threads).run(["x": input])[out])
            #expect(zip(f.data, u.data).allSatisfy { $0.bitPattern == $1.bitPattern }, "\(threads) threads")
        }
    }
}

/// An engine built from a model file keeps packed copies of its weights, not the file's pages too: once built, the
/// mapping of the file holds at most a page or two at each tensor's ends (it held the whole float file before),
/// and the outputs are those of the same model read from memory.
@Suite struct FilePagesTests {
    @Test func packedWeightsLeaveTheFilePagesToTheKernel() throws {
        var g = GraphBuilder(seed: 11, input: [-1, 12, 12, 16])
        let c1 = g.conv("x", cin: 16, cout: 256, k: (3, 3), pads: [1, 1, 1, 1], act: .relu)
        let c2 = g.conv(c1, cin: 256, cout: 256, k: (1, 1), act: .relu)
        let pooled = g.node(.globalAvgPool, [c2])
        let out = g.dense(pooled, 256, 600)
        let model = g.model(outputs: [out])
        let dir = NSTemporaryDirectory() + "mltool-filepages-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/m.bin"
        try ModelFile.write(model, to: path)
        let read = try ModelFile.read(path: path)
        let weightKB = read.tensors.reduce(0) { $0 + $1.bytes.count } / 1024
        #expect(weightKB > 700)
        let input = g.input([1, 12, 12, 16])
        do {
            let fromFile = try Engine(model: read, threads: 1)
            let page = sysconf(Int32(_SC_PAGESIZE)) / 1024
            let resident = ResidentMemory.kilobytes(mappedFrom: path)
            #expect(resident <= 2 * page * read.tensors.count, "\(resident) KB of the \(weightKB) KB file resident after init")
            let a = try #require(try fromFile.run(["x": input])[out])
            let b = try #require(try Engine(model: model, threads: 1).run(["x": input])[out])
            #expect(a.data.map(\.bitPattern) == b.data.map(\.bitPattern))
        }
    }
}

/// A residual block's projection (a 1×1 conv or a dense layer without activation) and the add of its skip connection run as one GEMM
/// (`FusedResidual`): the same bits as the two steps, with float, palettized and int8 weights (on the int8 kernels), on
/// 1 and 2 threads, for a batch and for one image; not fused where the add's activation is not exact at every vector
/// width, or where the projection's output is wanted too.
@Suite struct FusedResidualTests {
    @Test(arguments: [(14, 14, 24, 96, 0), (7, 9, 40, 160, 1), (28, 27, 16, 64, 2), (3, 5, 200, 48, 0)])
    func projectionAndAddMatchTheTwoSteps(_ c: (h: Int, w: Int, cin: Int, cmid: Int, act: Int)) throws {
        var g = GraphBuilder(seed: UInt64(c.cin), input: [-1, c.h, c.w, c.cin])
        let mid = g.conv("x", cin: c.cin, cout: c.cmid, k: (1, 1), act: .relu6)
        let proj = g.conv(mid, cin: c.cmid, cout: c.cin, k: (1, 1))
        var out = g.node(.add, [c.act == 1 ? proj : "x", c.act == 1 ? "x" : proj])
        if c.act == 1 { out = g.node(.relu, [out]) }
        if c.act == 2 { out = g.node(.sigmoid, [out]) }
        let fusedModel = g.model(outputs: [out]), unfusedModel = g.model(outputs: [out, proj])
        let input = g.input([2, c.h, c.w, c.cin])
        for threads in [1, 2] {
            #expect(try Self.residualSteps(fusedModel, outputs: [out], image: [1, c.h, c.w, c.cin], threads: threads)
                    == (c.act == 2 ? 0 : 1), "\(c), \(threads) threads: fused residual steps")
            #expect(try Self.residualSteps(unfusedModel, outputs: [out, proj], image: [1, c.h, c.w, c.cin], threads: threads) == 0)
        }
        let (paletteFused, _) = try PaletteTests.palettized(fusedModel)
        var paletteUnfused = unfusedModel
        paletteUnfused.tensors = paletteFused.tensors
        for (f, u, what) in [(fusedModel, unfusedModel, "float"), (paletteFused, paletteUnfused, "palette")] {
            try expectFusedBits(f, u, input: input, out, "\(c), \(what)")
        }
        // Int8 weights on the int8 kernels (`.all`: every conv, whatever its size), the activations quantized per row.
        let convWeights = Set(fusedModel.metadata.graph!.nodes.filter { $0.op == .conv }.map { $0.inputs[1] })
        var int8Fused = fusedModel, int8Unfused = unfusedModel
        int8Fused.tensors = try fusedModel.tensors.map { convWeights.contains($0.name) ? try int8Weights($0) : $0 }
        int8Unfused.tensors = int8Fused.tensors
        #expect(try Self.residualSteps(int8Fused, outputs: [out], image: [1, c.h, c.w, c.cin], threads: 1, int8: true)
                == (c.act == 2 ? 0 : 1), "\(c), int8: fused residual steps")
        try expectFusedBits(int8Fused, int8Unfused, input: input, out, "\(c), int8", int8Compute: .all, tolerance: 0.1)
    }

    /// A dense projection (matMul on constant weights, its bias in the GEMM) and the add of the residual stream, as a
    /// transformer's attention output and MLP end: the bits of the two steps with float and int8 weights, through the
    /// 8 × 48 tiles (128 × 64, 37 × 100), a last panel of ≤ 8 columns (40) and a lone row (33).
    @Test(arguments: [(128, 64, 0), (5, 40, 1), (1, 33, 0), (37, 100, 0)])
    func denseProjectionAndAddMatchTheTwoSteps(_ c: (rows: Int, width: Int, act: Int)) throws {
        var g = GraphBuilder(seed: UInt64(c.width), input: [-1, c.rows, c.width])
        let w = g.constant([c.width, c.width], -0.3, 0.3), b = g.constant([c.width], -0.5, 0.5)
        let proj = g.node(.matMul, ["x", w, b])
        var out = g.node(.add, [c.act == 1 ? proj : "x", c.act == 1 ? "x" : proj])
        if c.act == 1 { out = g.node(.relu, [out]) }
        let fusedModel = g.model(outputs: [out]), unfusedModel = g.model(outputs: [out, proj])
        let input = g.input([2, c.rows, c.width]), image = [1, c.rows, c.width]
        for threads in [1, 2] {
            #expect(try Self.residualSteps(fusedModel, outputs: [out], image: image, threads: threads) == 1, "\(c)")
            #expect(try Self.residualSteps(unfusedModel, outputs: [out, proj], image: image, threads: threads) == 0)
        }
        try expectFusedBits(fusedModel, unfusedModel, input: input, out, "\(c), float")
        var int8Fused = fusedModel, int8Unfused = unfusedModel
        int8Fused.tensors = try fusedModel.tensors.map { $0.name == w ? try int8Weights($0) : $0 }
        int8Unfused.tensors = int8Fused.tensors
        #expect(try Self.residualSteps(int8Fused, outputs: [out], image: image, threads: 1, int8: true) == 1, "\(c), int8")
        try expectFusedBits(int8Fused, int8Unfused, input: input, out, "\(c), int8", int8Compute: .all, tolerance: 0.1)
    }

    /// Fused residual steps in the plan the fast engine builds for `model` and `outputs` on one image (`int8`: with
    /// every conv's int8 weights on the int8 kernels).
    static func residualSteps(_ model: Model, outputs: [String], image: [Int], threads: Int, int8: Bool = false) throws -> Int {
        let optimized = try GraphPasses.optimize(model)
        let p = try Program(graph: try #require(optimized.metadata.graph), tensors: optimized.tensorsByName,
                            int8Minimum: int8 ? Engine.int8Minimum(.all) : nil)
        if int8 { #expect(p.steps.contains { $0.qweights != nil }, "no step has int8 weights") }
        let targets = try outputs.map { try #require(p.ids[$0], "\($0) is not in the optimized graph") }
        let plan = try Plan(program: p, inputShapes: [p.inputIds[0]: image], steps: p.needed(targets), targets: targets,
                            threads: threads)
        return plan.residual.compactMap { $0 }.count
    }
}

/// The activation arena's placement (`Plan.place`): values live at the same step never share memory, every offset
/// keeps the buffer's 64-byte alignment, and the arena is no larger than the sum of the values and no smaller than
/// the most memory live at one step.
@Suite struct ArenaPlacementTests {
    @Test func valuesLiveTogetherNeverOverlap() {
        var rng = SplitMix64(seed: 11)
        for round in 0..<200 {
            let steps = 2 + Int(rng.next() % 30)
            let lives = (0..<(1 + Int(rng.next() % 40))).map { v -> Plan.Lifetime in
                let first = Int(rng.next() % UInt64(steps + 1)) - 1
                let last = first + Int(rng.next() % 6)
                return Plan.Lifetime(value: v * 3 + 1, first: first, last: last, floats: Int(rng.next() % 5000))
            }
            let (offset, floats) = Plan.place(lives)
            let rounded = { (l: Plan.Lifetime) in (l.floats + 15) / 16 * 16 }
            #expect(offset.count == lives.count)
            var clash = 0
            for a in lives {
                let oa = offset[a.value] ?? -1
                #expect(oa >= 0 && oa % 16 == 0 && oa + rounded(a) <= floats, "round \(round): value \(a.value) at \(oa)")
                for b in lives where b.value < a.value && a.first <= b.last && b.first <= a.last {
                    let ob = offset[b.value] ?? -1
                    if oa < ob + rounded(b) && ob < oa + rounded(a) && rounded(a) > 0 && rounded(b) > 0 { clash += 1 }
                }
            }
            #expect(clash == 0, "round \(round): \(clash) pairs of values live together share memory")
            #expect(floats <= lives.map(rounded).reduce(0, +))
            let peak = (-1...steps + 6).map { t in lives.filter { $0.first <= t && t <= $0.last }.map(rounded).reduce(0, +) }.max() ?? 0
            #expect(floats >= peak)
        }
    }

    /// An image, a stem conv, a depthwise conv, a projection and an expansion (EfficientNet-Lite0's first steps, in
    /// thousands of floats): placed largest first, the stem's and the depthwise conv's outputs take the bottom 802 and
    /// the projection, live with the depthwise output and the expansion, goes above them (1,004); the arena holds
    /// exactly the 802 live at the widest step.
    @Test func reachesThePeakWhereLargestFirstDoesNot() {
        let lives = [(0, -1, 0, 150_528), (1, 0, 1, 401_408), (2, 1, 2, 401_408), (3, 2, 3, 200_704),
                     (4, 3, 4, 301_056), (5, 4, 5, 75_264)]
            .map { Plan.Lifetime(value: $0.0, first: $0.1, last: $0.2, floats: $0.3) }
        let (offset, floats) = Plan.place(lives)
        #expect(floats == 802_816)
        #expect(offset.count == lives.count)
        for a in lives { for b in lives where b.value < a.value && a.first <= b.last && b.first <= a.last {
            let (oa, ob) = (offset[a.value] ?? -1, offset[b.value] ?? -1)
            #expect(oa >= ob + b.floats || ob >= oa + a.floats, "values \(a.value) and \(b.value) overlap")
        } }
    }
}

/// Two inputs whose batch sizes differ (one broadcast against the other along the first axis) are not split into
/// images: the result is the broadcast sum whichever input is the larger (the batch used to be read from whichever
/// input a dictionary gave first, so one of the two orders split the wrong way).
@Test func inputsBroadcastAlongTheBatchAreNotSplit() throws {
    var g = GraphBuilder(seed: 3, input: [-1, 4])
    g.inputs.append(GraphInput(name: "y", shape: [-1, 4]))
    let sum = g.node(.add, ["x", "y"], name: "sum")
    let engine = try Engine(model: g.model(outputs: [sum]), threads: 1)
    let one = Tensor(shape: [1, 4], data: [1, 2, 3, 4])
    let three = Tensor(shape: [3, 4], data: (0..<12).map { Float($0) * 10 })
    let expected = Tensor(shape: [3, 4], data: (0..<12).map { Float($0) * 10 + Float($0 % 4 + 1) })
    for (x, y) in [(one, three), (three, one)] {
        let got = try #require(try engine.run(["x": x, "y": y])[sum])
        assertClose(got, expected, atol: 0)
    }
}
