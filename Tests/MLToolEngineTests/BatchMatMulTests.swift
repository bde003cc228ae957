import Foundation
import MLToolCore
import MLToolEngine
import MLToolTestSupport
import Testing

/// batchMatMul of two computed tensors: the packed-GEMM fast path against the scalar reference, with broadcast
/// batch axes.
@Suite struct BatchMatMulTests {
    /// (a's shape, b's shape, the output's): b is computed from a second graph input.
    static let cases: [([Int], [Int], [Int])] = [
        ([2, 3, 5], [2, 5, 4], [2, 3, 4]),
        ([2, 2, 7, 9], [2, 2, 9, 6], [2, 2, 7, 6]),       // attention's (N, heads, T, d) · (N, heads, d, T)
        ([2, 3, 4, 5], [3, 5, 2], [2, 3, 4, 2]),          // b broadcast over the first axis
        ([2, 1, 4, 5], [2, 3, 5, 2], [2, 3, 4, 2]),       // a broadcast over heads
        ([2, 40, 33], [2, 33, 50], [2, 40, 50]),          // enough work for the GEMM's thread split
        ([3, 6], [6, 1], [3, 1]),
    ]

    static func model(_ a: [Int], _ b: [Int]) -> Model {
        let node = Node(name: "bmm", op: .batchMatMul, inputs: ["a", "b"], outputs: ["y"])
        var meta = ModelMetadata(task: .network, graph: Graph(inputs: [GraphInput(name: "a", shape: a), GraphInput(name: "b", shape: b)],
                                                              outputs: ["y"], nodes: [node]))
        meta.name = "bmm"
        return Model(metadata: meta, tensors: [])
    }

    @Test(arguments: cases.indices)
    func fastMatchesReference(_ i: Int) throws {
        let (aShape, bShape, yShape) = Self.cases[i]
        var g = GraphBuilder(seed: UInt64(300 + i), input: aShape)
        let a = g.input(aShape), b = g.input(bShape)
        let model = Self.model(aShape, bShape)
        for threads in [1, 2] {
            let (fast, ref) = try bothModes(model, ["a": a, "b": b], threads: threads)
            let f = try #require(fast["y"]), r = try #require(ref["y"])
            #expect(r.shape == yShape)
            assertClose(f, r, rtol: fastTolerance, atol: fastTolerance, "\(aShape) · \(bShape) with \(threads) threads")
        }
    }

    /// [[1, 2], [3, 4]] · [[5, 6], [7, 8]] and the second batch item with b's rows swapped.
    @Test func multipliesByHand() throws {
        let model = Self.model([2, 2, 2], [2, 2, 2])
        let a = Tensor(shape: [2, 2, 2], data: [1, 2, 3, 4, 1, 2, 3, 4]), b = Tensor(shape: [2, 2, 2], data: [5, 6, 7, 8, 7, 8, 5, 6])
        for mode in [Engine.Mode.fast, .reference] {
            let y = try #require(try Engine(model: model, threads: 1, mode: mode).run(["a": a, "b": b])["y"])
            #expect(y.data == [19, 22, 43, 50, 17, 20, 41, 48], "\(mode)")
        }
    }

    @Test func refusesMismatchedInnerSizes() throws {
        let model = Self.model([2, 3, 5], [2, 4, 4])
        #expect(throws: EngineError.self) {
            _ = try Engine(model: model, threads: 1).run(["a": Tensor(shape: [2, 3, 5], data: [Float](repeating: 0, count: 30)),
                                                          "b": Tensor(shape: [2, 4, 4], data: [Float](repeating: 0, count: 32))])
        }
    }
}
