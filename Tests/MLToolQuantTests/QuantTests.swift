import Testing
import MLToolCore
@testable import MLToolQuant

/// Plain reference implementations live here, in the test, and the quantizers are checked against them.
@Suite struct QuantTests {
    static func randomWeights(_ shape: [Int], seed: UInt64) -> [Float] {
        var rng = SplitMix64(seed: seed)
        let n = shape.reduce(1, *)
        // Channels with very different ranges, like BN-folded convs.
        let oc = shape.last ?? 1
        return (0..<n).map { i in (rng.nextUnit() * 2 - 1) * Float(1 << ((i % oc) % 6)) * 0.01 }
    }

    static func tensor(_ shape: [Int], seed: UInt64) -> StoredTensor {
        StoredTensor(name: "w", tensor: Tensor(shape: shape, data: randomWeights(shape, seed: seed)))
    }

    @Test func symmetricPerChannelErrorWithinHalfStep() throws {
        let shape = [3, 3, 5, 7]
        let t = Self.tensor(shape, seed: 1)
        let w = try t.floats()
        let q = LinearQuantizer.quantize(t, values: w, axis: 3, asymmetric: false)
        #expect(q.dtype == .int8 && q.bytes.count == w.count)
        let back = try q.floats()
        // Reference: per output channel c, scale = max|w| / 127.
        for c in 0..<7 {
            let members = stride(from: c, to: w.count, by: 7)
            let scale = members.map { abs(w[$0]) }.max()! / 127
            for i in members { #expect(abs(back[i] - w[i]) <= scale / 2 * 1.0001) }
        }
    }

    @Test func asymmetricPerTensorErrorWithinHalfStep() throws {
        let t = Self.tensor([64, 10], seed: 2)
        let w = try t.floats()
        let q = LinearQuantizer.quantize(t, values: w, axis: nil, asymmetric: true)
        let back = try q.floats()
        let lo = min(0, w.min()!), hi = max(0, w.max()!)
        let scale = (hi - lo) / 255
        for i in w.indices { #expect(abs(back[i] - w[i]) <= scale / 2 * 1.01 + 1e-7) }
    }

    @Test func fp16RelativeError() throws {
        let t = Self.tensor([100, 30], seed: 3)
        let model = Model(metadata: ModelMetadata(task: .network, graph: Graph(
            inputs: [GraphInput(name: "x", shape: [-1, 100])], outputs: ["y"],
            nodes: [Node(name: "d", op: .dense, inputs: ["x", "w"], outputs: ["y"])])), tensors: [t])
        let (q, reports) = try Quantizer.quantize(model, QuantizeOptions(mode: .fp16, bits: 16, minElements: 0))
        let w = try t.floats(), back = try q.tensors[0].floats()
        #expect(q.tensors[0].dtype == .f16)
        for i in w.indices { #expect(abs(back[i] - w[i]) <= abs(w[i]) * 0x1p-11 + 1e-7) }
        #expect(reports.count == 1 && reports[0].bytesAfter == w.count * 2)
    }

    @Test(arguments: [1, 2, 4, 6, 8])
    func paletteReproducibleAndNearest(bits: Int) throws {
        let t = Self.tensor([2, 2, 8, 6], seed: 4)
        let w = try t.floats()
        let a = try Palettizer.palettize(t, values: w, bits: bits, axis: 3, groupSize: 2, seed: 9)
        let b = try Palettizer.palettize(t, values: w, bits: bits, axis: 3, groupSize: 2, seed: 9)
        #expect(Array(a.bytes.buffer) == Array(b.bytes.buffer) && a.quant == b.quant)
        // Every weight maps to the nearest entry of its group's table (reference: brute force).
        let back = try a.floats()
        let lut = try #require(a.quant?.lut)
        let k = 1 << bits
        for i in w.indices {
            let group = (i % 6) / 2
            let table = lut[(group * k)..<((group + 1) * k)]
            let best = table.map { abs($0 - w[i]) }.min()!
            #expect(abs(back[i] - w[i]) <= best + 1e-6)
        }
    }

    @Test func paletteIsExactWhenFewDistinctValues() throws {
        let vals: [Float] = [0.5, -1, 0.25, 0.5, -1, 2, 2, 0.25]
        let t = StoredTensor(name: "w", tensor: Tensor(shape: [8], data: vals))
        let q = try Palettizer.palettize(t, values: vals, bits: 2, axis: nil, groupSize: nil, seed: 1)
        #expect(try q.floats() == vals)
    }

    @Test func kmeansMatchesBruteForceLloydOnSmallData() {
        // Reference: Lloyd's algorithm by brute force from the same initial centroids.
        var rng = SplitMix64(seed: 5)
        let v = (0..<300).map { _ in rng.nextUnit() * 10 }
        let (c, assign) = KMeans1D.fit(v, k: 4, seed: 3)
        var ref = KMeans1D.seedPlusPlus(v.map(Double.init).sorted(), k: 4, seed: 3)
        for _ in 0..<50 {
            var sums = [Double](repeating: 0, count: 4), counts = [Int](repeating: 0, count: 4)
            for x in v {
                let j = ref.indices.min { abs(ref[$0] - Double(x)) < abs(ref[$1] - Double(x)) }!
                sums[j] += Double(x); counts[j] += 1
            }
            ref = (0..<4).map { counts[$0] > 0 ? sums[$0] / Double(counts[$0]) : ref[$0] }.sorted()
        }
        for j in 0..<4 { #expect(abs(Double(c[j]) - ref[j]) < 1e-4) }
        for (x, a) in zip(v, assign) {
            let nearest = c.indices.min { abs(c[$0] - x) < abs(c[$1] - x) }!
            #expect(abs(c[a] - x) <= abs(c[nearest] - x) + 1e-6)
        }
    }

    @Test func smallTensorsAreSkippedWithReason() throws {
        let t = Self.tensor([10, 4], seed: 6)
        let model = Model(metadata: ModelMetadata(task: .network, graph: Graph(
            inputs: [GraphInput(name: "x", shape: [-1, 10])], outputs: ["y"],
            nodes: [Node(name: "d", op: .dense, inputs: ["x", "w"], outputs: ["y"])])), tensors: [t])
        let (q, r) = try Quantizer.quantize(model, QuantizeOptions(mode: .linear, bits: 8))
        #expect(q.tensors[0].dtype == .f32)
        #expect(r[0].skipped == "40 elements < --min-elements 2048")
        #expect(throws: QuantError.self) { try Quantizer.quantize(model, QuantizeOptions(mode: .linear, bits: 4)) }
    }
}
