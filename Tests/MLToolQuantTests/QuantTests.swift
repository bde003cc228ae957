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
        let stored = try #require(q.quant?.scales)
        #expect(q.quant?.scalesType == "bf16")
        // Reference: per output channel c, scale = max|w| / 127, stored rounded up to bfloat16 (≤ 2⁻⁷ larger).
        for c in 0..<7 {
            let members = stride(from: c, to: w.count, by: 7)
            let scale = members.map { abs(w[$0]) }.max()! / 127
            #expect(stored[c] >= scale && stored[c] <= scale * (1 + 0x1p-7) && stored[c].bitPattern & 0xFFFF == 0)
            for i in members { #expect(abs(back[i] - w[i]) <= stored[c] / 2 * 1.0001) }
        }
    }

    @Test func asymmetricPerTensorErrorWithinHalfStep() throws {
        let t = Self.tensor([64, 10], seed: 2)
        let w = try t.floats()
        let q = LinearQuantizer.quantize(t, values: w, axis: nil, asymmetric: true)
        let back = try q.floats()
        let lo = min(0, w.min()!), hi = max(0, w.max()!)
        let scale = (hi - lo) / 255
        let stored = try #require(q.quant?.scales?.first)
        #expect(stored >= scale && stored <= scale * (1 + 0x1p-7))
        for i in w.indices { #expect(abs(back[i] - w[i]) <= stored / 2 * 1.01 + 1e-7) }
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

    // MARK: bias correction

    /// Reference: the mean output of y = conv(x, W) + b over inputs with per-channel mean μ, written out directly.
    static func referenceShift(_ w: [Float], _ wq: [Float], kh: Int, kw: Int, cin: Int, cout: Int, groups: Int,
                               _ mu: [Float]) -> [Double] {
        let cinG = cin / groups, perGroup = cout / groups
        return (0..<cout).map { co in
            var s = 0.0
            for y in 0..<kh { for x in 0..<kw { for ci in 0..<cinG {
                let i = ((y * kw + x) * cinG + ci) * cout + co
                s += Double(w[i] - wq[i]) * Double(mu[(co / perGroup) * cinG + ci])
            } } }
            return s
        }
    }

    @Test(arguments: [1, 2, 6])
    func biasShiftMatchesReference(groups: Int) throws {
        let (kh, kw, cin, cout) = (3, 2, 6, 6)
        let shape = [kh, kw, cin / groups, cout]
        var rng = SplitMix64(seed: UInt64(groups))
        let w = (0..<shape.reduce(1, *)).map { _ in rng.nextUnit() - 0.5 }
        let wq = w.map { ($0 * 4).rounded() / 4 }
        let mu = (0..<cin).map { _ in rng.nextUnit() * 3 }
        let s = try BiasCorrection.shift(weight: w, quantized: wq, shape: shape, groups: groups, inputMean: mu)
        let ref = Self.referenceShift(w, wq, kh: kh, kw: kw, cin: cin, cout: cout, groups: groups, mu)
        for c in 0..<cout { #expect(abs(Double(s[c]) - ref[c]) < 1e-5) }
        #expect(throws: QuantError.self) {
            try BiasCorrection.shift(weight: w, quantized: wq, shape: shape, groups: groups, inputMean: [1, 2])
        }
    }

    /// On a dense layer with inputs at a constant mean, the corrected quantized model has the float mean output.
    @Test func biasCorrectionRestoresTheMeanOutput() throws {
        let (n, k) = (64, 5)
        var rng = SplitMix64(seed: 11)
        let w = (0..<(n * k)).map { _ in rng.nextUnit() - 0.5 }
        let b = (0..<k).map { _ in rng.nextUnit() }
        let model = Model(metadata: ModelMetadata(task: .network, graph: Graph(
            inputs: [GraphInput(name: "x", shape: [-1, n])], outputs: ["y"],
            nodes: [Node(name: "d", op: .dense, inputs: ["x", "w", "b"], outputs: ["y"])])),
            tensors: [StoredTensor(name: "w", tensor: Tensor(shape: [n, k], data: w)),
                      StoredTensor(name: "b", tensor: Tensor(shape: [k], data: b))])
        var (q, _) = try Quantizer.quantize(model, QuantizeOptions(mode: .palette, bits: 2, minElements: 0))
        #expect(BiasCorrection.layers(of: model) == [.init(input: "x", weight: "w", bias: "b", groups: 1)])
        let mu = (0..<n).map { _ in rng.nextUnit() + 0.5 }
        #expect(try BiasCorrection.apply(original: model, quantized: &q, inputMeans: ["x": mu]) == 1)
        let wq = try q.tensors[0].floats(), bq = try q.tensors[1].floats()
        for c in 0..<k {
            let floatMean = (0..<n).reduce(Double(b[c])) { $0 + Double(w[$1 * k + c]) * Double(mu[$1]) }
            let quantMean = (0..<n).reduce(Double(bq[c])) { $0 + Double(wq[$1 * k + c]) * Double(mu[$1]) }
            #expect(abs(floatMean - quantMean) < 1e-4)
        }
        // Without the correction the 2-bit weights do shift the mean (the test would otherwise prove nothing).
        let shiftBefore = (0..<k).map { c in (0..<n).reduce(0.0) { $0 + Double(w[$1 * k + c] - wq[$1 * k + c]) * Double(mu[$1]) } }
        #expect(shiftBefore.contains { abs($0) > 1e-3 })
        // A weight left in float keeps its bias.
        var kept = model
        #expect(try BiasCorrection.apply(original: model, quantized: &kept, inputMeans: ["x": mu]) == 0)
    }

    @Test(arguments: [1, 2, 4, 6, 8])
    func packedIndicesRoundTripAgainstAPlainBitStream(bits: Int) {
        var rng = SplitMix64(seed: UInt64(bits))
        let idx = (0..<37).map { _ in Int(rng.next() % UInt64(1 << bits)) }
        let packed = PackedBits.pack(idx, bits: bits)
        #expect(packed.count == (37 * bits + 7) / 8)
        // Reference: element i is stream bits [i·k, i·k + k), stream bit j = bit (j mod 8) of byte j / 8.
        var stream = [Int](repeating: 0, count: packed.count * 8)
        for (i, v) in idx.enumerated() { for b in 0..<bits { stream[i * bits + b] = (v >> b) & 1 } }
        let ref = (0..<packed.count).map { byte in (0..<8).reduce(0) { $0 | stream[byte * 8 + $1] << $1 } }
        #expect(packed.map(Int.init) == ref)
        packed.withUnsafeBytes { raw in
            #expect((0..<37).map { PackedBits.get(raw, index: $0, bits: bits) } == idx)
        }
    }

    // MARK: scale refit and error feedback

    @Test func scaleRefitNeverLowersTheSNRMuchAndIsReproducible() throws {
        let shape = [1, 1, 48, 32]
        let t = Self.tensor(shape, seed: 21)
        let w = try t.floats()
        let plain = try Palettizer.palettize(t, values: w, bits: 4, axis: nil, groupSize: nil, seed: 3, channelAxis: 3, refits: 0)
        let refit = try Palettizer.palettize(t, values: w, bits: 4, axis: nil, groupSize: nil, seed: 3, channelAxis: 3)
        let again = try Palettizer.palettize(t, values: w, bits: 4, axis: nil, groupSize: nil, seed: 3, channelAxis: 3)
        #expect(Array(refit.bytes.buffer) == Array(again.bytes.buffer) && refit.quant == again.quant)
        let snrPlain = try #require(Quantizer.error(w, try plain.floats()).0)
        let snrRefit = try #require(Quantizer.error(w, try refit.floats()).0)
        #expect(snrRefit > snrPlain - 0.1, "refit \(snrRefit) dB vs plain \(snrPlain) dB")
        #expect(refit.quant?.scales?.allSatisfy { $0.bitPattern & 0xFFFF == 0 } == true)
    }

    /// `Palettizer.nearest` finds what a linear scan finds (the first of equally near entries) in ascending tables
    /// with repeated entries, targets on entries, halfway between two and outside the table; and scans a table out
    /// of order.
    @Test func nearestEntryIsTheLinearScansFirstBest() {
        var rng = SplitMix64(seed: 77)
        for trial in 0..<400 {
            let k = [2, 4, 16, 64][trial % 4]
            var table = (0..<k).map { _ in Float(Int(rng.nextUnit() * 21) - 10) }
            let ascending = trial % 7 != 0
            if ascending { table.sort() }
            let slice = ([Float](repeating: 99, count: 3) + table)[3...]   // a slice that does not start at 0
            for t in 0..<50 {
                let target = t < 25 ? Double(Int(rng.nextUnit() * 25) - 12) / (t % 2 == 0 ? 1 : 2)
                                    : Double(rng.nextUnit() * 26 - 13)
                var best = 0, bestDist = Double.infinity
                for j in 0..<k where abs(Double(table[j]) - target) < bestDist { bestDist = abs(Double(table[j]) - target); best = j }
                #expect(Palettizer.nearest(slice, to: target, ascending: ascending) == best,
                        "table \(table), target \(target)")
            }
        }
    }

    /// `--lut int8`: every table holds integers in −127…127 (its largest magnitude 127), each weight is the nearest
    /// entry in its channel's units, the scales are bfloat16, and the weights lose little against float tables.
    @Test(arguments: [(2, nil as Int?), (4, 8 as Int?), (6, nil as Int?)])
    func int8TablesAreIntegersAndNearest(bits: Int, groupSize: Int?) throws {
        let shape = [3, 3, 40, 32]
        let t = Self.tensor(shape, seed: 23)
        let w = try t.floats()
        let axis = groupSize == nil ? nil as Int? : 3
        let float = try Palettizer.palettize(t, values: w, bits: bits, axis: axis, groupSize: groupSize, seed: 3, channelAxis: 3)
        let int8 = try Palettizer.palettize(t, values: w, bits: bits, axis: axis, groupSize: groupSize, seed: 3, channelAxis: 3,
                                            int8Table: true)
        let q = try #require(int8.quant), lut = try #require(q.lut), scales = try #require(q.scales)
        let k = 1 << bits, n = 32, g = q.groupSize ?? 1
        #expect(q.axis == 3 && lut.count == ((n + g - 1) / g) * k && scales.count == n)
        #expect(lut.allSatisfy { $0 == $0.rounded() && abs($0) <= 127 }, "\(lut)")
        for group in 0..<(lut.count / k) { #expect(lut[(group * k)..<((group + 1) * k)].map(abs).max() == 127) }
        #expect(scales.allSatisfy { $0 > 0 && $0.bitPattern & 0xFFFF == 0 })
        let back = try int8.floats()
        for i in w.indices {
            let c = i % n, table = lut[((c / g) * k)..<((c / g) * k + k)].map { $0 * scales[c] }
            let best = table.map { abs($0 - w[i]) }.min()!
            #expect(abs(back[i] - w[i]) <= best * 1.0001 + 1e-7, "weight \(i)")
        }
        let snrFloat = try #require(Quantizer.error(w, try float.floats()).0)
        let snrInt8 = try #require(Quantizer.error(w, try int8.floats()).0)
        #expect(snrInt8 > snrFloat - (bits == 6 ? 1.0 : 0.5), "\(bits) bits: int8 table \(snrInt8) dB vs float \(snrFloat) dB")
        // Without channel scales there is no step to fold the table's into.
        #expect(throws: QuantError.self) {
            try Palettizer.palettize(t, values: w, bits: bits, axis: nil, groupSize: nil, seed: 3, int8Table: true)
        }
    }

    /// Palettes get int8 tables by default wherever they have per-channel scales (grouped tables too), float tables
    /// with `perTensor` or when asked (`int8Table = false`, `--lut float`); asking for int8 tables where they cannot
    /// be (per tensor, linear) is an error, and other modes never take them.
    @Test func palettesDefaultToInt8TablesWhereTheyHaveChannelScales() throws {
        let model = Model(metadata: ModelMetadata(task: .network, graph: Graph(
            inputs: [GraphInput(name: "x", shape: [-1, 100])], outputs: ["y"],
            nodes: [Node(name: "d", op: .dense, inputs: ["x", "w"], outputs: ["y"])])), tensors: [Self.tensor([100, 32], seed: 5)])
        func tables(_ o: QuantizeOptions) throws -> (int8: Bool, palette: Bool) {
            let t = try Quantizer.quantize(model, o).0.tensors[0]
            return (t.int8Table() != nil, t.dtype.traits.isPalette)
        }
        var grouped = QuantizeOptions(mode: .palette, bits: 4, groupSize: 8)
        for bits in [2, 4, 6] {
            let o = QuantizeOptions(mode: .palette, bits: bits)
            #expect(o.int8Table == nil && o.usesInt8Table)
            #expect(try tables(o) == (true, true), "\(bits) bits, default")
            var float = o
            float.int8Table = false
            #expect(!float.usesInt8Table)
            #expect(try tables(float) == (false, true), "\(bits) bits, float tables")
            let perTensor = QuantizeOptions(mode: .palette, bits: bits, perTensor: true)
            #expect(!perTensor.usesInt8Table)
            #expect(try tables(perTensor) == (false, true), "\(bits) bits, per tensor")
            var asked = perTensor
            asked.int8Table = true
            #expect(throws: QuantError.self) { try Quantizer.quantize(model, asked) }
        }
        grouped.minElements = 0
        #expect(try tables(grouped) == (true, true))
        #expect(!QuantizeOptions(mode: .linear, bits: 8).usesInt8Table && !QuantizeOptions(mode: .fp16, bits: 16).usesInt8Table)
        var linear = QuantizeOptions(mode: .linear, bits: 8)
        linear.int8Table = true
        #expect(throws: QuantError.self) { try Quantizer.quantize(model, linear) }
    }

    /// Reference: (P(H + λI)Pᵀ) · Uᵀ U must be the identity, P the factor's input order.
    @Test func errorFeedbackFactorInvertsTheDampedHessian() throws {
        let n = 7
        var rng = SplitMix64(seed: 30)
        let x = (0..<(50 * n)).map { _ in rng.nextUnit() - 0.3 }
        var h = [Float](repeating: 0, count: n * n)
        for s in 0..<50 { for a in 0..<n { for b in 0..<n { h[a * n + b] += x[s * n + a] * x[s * n + b] / 50 } } }
        let f = try #require(ErrorFeedback.factor(hessian: h, inputs: n, damping: 0.01))
        let u = f.u
        #expect(f.order.sorted() == Array(0..<n))
        #expect(zip(f.order, f.order.dropFirst()).allSatisfy { h[$0 * n + $0] >= h[$1 * n + $1] })   // largest E[x²] first
        let lambda = 0.01 * (0..<n).reduce(0.0) { $0 + Double(h[$1 * n + $1]) } / Double(n)
        for r in 0..<n {
            for c in 0..<n {
                #expect(r <= c || u[r * n + c] == 0)    // upper triangular
                var v = 0.0
                for m in 0..<n {
                    var inv = 0.0   // (Uᵀ U)[m, c]
                    for j in 0..<n { inv += u[j * n + m] * u[j * n + c] }
                    v += (Double(h[f.order[r] * n + f.order[m]]) + (r == m ? lambda : 0)) * inv
                }
                #expect(abs(v - (r == c ? 1 : 0)) < 1e-6)
            }
        }
        #expect(ErrorFeedback.factor(hessian: [1, 2], inputs: 2) == nil)
    }

    /// On correlated inputs, error feedback lowers the layer's output error against plain nearest-entry indices;
    /// with uncorrelated unit inputs (H = I) it changes nothing.
    @Test func errorFeedbackLowersTheOutputError() throws {
        let (n, cin, cout) = (400, 24, 16)
        var rng = SplitMix64(seed: 31)
        let base = (0..<(n * 4)).map { _ in rng.nextUnit() - 0.5 }
        // Every input channel mixes 4 shared factors: strongly correlated, like real activations.
        let mix = (0..<(4 * cin)).map { _ in rng.nextUnit() - 0.5 }
        var x = [Float](repeating: 0, count: n * cin)
        for s in 0..<n { for c in 0..<cin { for f in 0..<4 { x[s * cin + c] += base[s * 4 + f] * mix[f * cin + c] } ; x[s * cin + c] += 0.05 * (rng.nextUnit() - 0.5) } }
        var h = [Float](repeating: 0, count: cin * cin)
        for s in 0..<n { for a in 0..<cin { for b in 0..<cin { h[a * cin + b] += x[s * cin + a] * x[s * cin + b] / Float(n) } } }
        let t = Self.tensor([cin, cout], seed: 32)
        let w = try t.floats()
        let plain = try Palettizer.palettize(t, values: w, bits: 2, axis: nil, groupSize: nil, seed: 1, channelAxis: 1)
        #expect(ErrorFeedback.applies(to: plain))
        let u = try #require(ErrorFeedback.factor(hessian: h, inputs: cin))
        let fed = try ErrorFeedback.refine(plain, original: w, factor: u)
        #expect(fed.quant == plain.quant)
        func outputError(_ q: StoredTensor) throws -> Double {
            let wq = try q.floats()
            var e = 0.0
            for s in 0..<n { for co in 0..<cout {
                var d = 0.0
                for ci in 0..<cin { d += Double(x[s * cin + ci]) * Double(w[ci * cout + co] - wq[ci * cout + co]) }
                e += d * d
            } }
            return e
        }
        let before = try outputError(plain), after = try outputError(fed)
        #expect(after < before * 0.8, "output error \(after) vs \(before) without feedback")
        // H = I: nothing to compensate through, so the indices stay the nearest ones.
        var eye = [Float](repeating: 0, count: cin * cin)
        for i in 0..<cin { eye[i * cin + i] = 1 }
        let same = try ErrorFeedback.refine(plain, original: w, factor: try #require(ErrorFeedback.factor(hessian: eye, inputs: cin)))
        #expect(Array(same.bytes.buffer) == Array(plain.bytes.buffer))
        // A 3×3 conv is not handled.
        let conv = try Palettizer.palettize(Self.tensor([3, 3, 2, 4], seed: 2), values: try Self.tensor([3, 3, 2, 4], seed: 2).floats(),
                                            bits: 2, axis: nil, groupSize: nil, seed: 1, channelAxis: 3)
        #expect(!ErrorFeedback.applies(to: conv))
    }

    // MARK: mixed precision

    @Test func mixedPrecisionStaysWithinTheRoomAndPrefersSensitivityPerByte() {
        // Reference bytes: packed indices + tables of 2^bits binary32 values in base64.
        #expect(MixedPrecision.paletteBytes(elements: 1000, tables: 1, bits: 4) == 500 + (16 * 16 + 2) / 3)
        #expect(MixedPrecision.paletteBytes(elements: 7, tables: 2, bits: 6) == 6 + (2 * 64 * 16 + 2) / 3)
        let c = [MixedPrecision.Candidate(name: "big", elements: 100_000, tables: 1, sensitivity: 1.0),
                 MixedPrecision.Candidate(name: "small", elements: 1_000, tables: 1, sensitivity: 0.1),
                 MixedPrecision.Candidate(name: "calm", elements: 1_000, tables: 1, sensitivity: 0)]
        func cost(_ levels: [String: Int]) -> Int {
            levels.reduce(0) { sum, kv in
                let e = c.first { $0.name == kv.key }!.elements
                return sum + MixedPrecision.paletteBytes(elements: e, tables: 1, bits: kv.value)
                    - MixedPrecision.paletteBytes(elements: e, tables: 1, bits: 4)
            }
        }
        #expect(MixedPrecision.allocate(c, bits: 4, room: 0).isEmpty)
        // "small" gains 0.1 per ~0.4 KB, "big" 1.0 per 25 KB: small first, and to 8 bits before big fits.
        let tight = MixedPrecision.allocate(c, bits: 4, room: 2_000)
        #expect(tight == ["small": 8] && cost(tight) <= 2_000)
        let roomy = MixedPrecision.allocate(c, bits: 4, room: 30_000)
        #expect(roomy["big"] == 6 && roomy["small"] == 8 && roomy["calm"] == nil && cost(roomy) <= 30_000)
        for room in [0, 500, 5_000, 60_000, 1_000_000] {
            let levels = MixedPrecision.allocate(c, bits: 4, room: room)
            #expect(cost(levels) <= room && levels.values.allSatisfy { [6, 8].contains($0) })
            #expect(levels == MixedPrecision.allocate(c, bits: 4, room: room))
        }
    }
}
