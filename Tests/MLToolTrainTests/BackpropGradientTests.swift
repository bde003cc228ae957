import MLToolCore
import MLToolTestSupport
import Testing
@testable import MLToolTrain

/// The training kernels' gradients against central differences of their own forward definitions, in Double
/// (h = 1e-6, every element): each backward reference within 1e-6 relative. The fast Float kernels are held to the
/// references in BackpropKernelTests, and to PyTorch autograd in BackpropTorchTests.
@Suite struct BackpropGradientTests {
    /// Every convolution shape the top of a mobile CNN uses.
    static let geometries: [ConvGeometry] = {
        func g(_ n: Int, _ h: Int, _ w: Int, _ c: Int, k: (Int, Int), oc: Int, groups: Int = 1, s: (Int, Int) = (1, 1),
               d: (Int, Int) = (1, 1), p: (Int, Int, Int, Int) = (0, 0, 0, 0)) -> ConvGeometry? {
            try? ConvGeometry(batch: n, height: h, width: w, channels: c, kernel: k, outChannels: oc, groups: groups,
                              strides: s, dilations: d, pads: (p.0, p.1, p.2, p.3))
        }
        return [
            g(2, 3, 4, 5, k: (1, 1), oc: 3),                                  // pointwise
            g(1, 5, 5, 3, k: (3, 3), oc: 4, p: (1, 1, 1, 1)),                 // 3×3 same
            g(2, 6, 5, 2, k: (3, 3), oc: 3, s: (2, 2), p: (0, 1, 1, 1)),      // strided, asymmetric pads
            g(1, 7, 7, 2, k: (3, 3), oc: 2, d: (2, 2), p: (2, 2, 2, 2)),      // dilated
            g(1, 4, 4, 4, k: (3, 3), oc: 6, groups: 2, p: (1, 1, 1, 1)),      // grouped
            g(2, 5, 4, 4, k: (3, 3), oc: 4, groups: 4, s: (2, 1), p: (1, 1, 1, 1)),  // depthwise
            g(1, 5, 5, 3, k: (5, 5), oc: 3, groups: 3, s: (2, 2), p: (2, 2, 2, 2)),  // depthwise 5×5 stride 2
            g(1, 4, 4, 2, k: (3, 3), oc: 6, groups: 2, p: (1, 1, 1, 1)),      // depthwise, multiplier 3
            g(3, 1, 1, 6, k: (1, 1), oc: 4),                                  // dense
        ].compactMap { $0 }
    }()

    @Test func geometriesAreAllBuilt() { #expect(Self.geometries.count == 9) }

    @Test(arguments: geometries)
    func convolution(_ g: ConvGeometry) throws {
        var rng = SplitMix64(seed: 7)
        let x = random(g.inputCount, &rng), w = random(g.weightCount, &rng), b = random(g.outChannels, &rng)
        let r = random(g.outputCount, &rng)
        let (dx, dw, db) = try ConvReference.backward(g, x: x, w: w, dy: r)
        let loss = { (x: [Double], w: [Double], b: [Double]) in dot(try ConvReference.forward(g, x: x, w: w, bias: b), r) }
        assertClose(dx, try numericGradient(x) { try loss($0, w, b) }, rtol: 1e-6, atol: 1e-7, "\(g) dx")
        assertClose(dw, try numericGradient(w) { try loss(x, $0, b) }, rtol: 1e-6, atol: 1e-7, "\(g) dw")
        assertClose(db, try numericGradient(b) { try loss(x, w, $0) }, rtol: 1e-6, atol: 1e-7, "\(g) db")
    }

    @Test(arguments: [BatchNormTraining<Double>.Statistics.batch, .frozen])
    func batchNorm(_ statistics: BatchNormTraining<Double>.Statistics) throws {
        var rng = SplitMix64(seed: 11)
        let c = 3, x = random(4 * 5 * c, &rng).map { $0 * 3 + 1 }, r = random(x.count, &rng)
        let gamma = random(c, &rng), beta = random(c, &rng)
        let running = (mean: random(c, &rng), variance: random(c, &rng).map { $0 * $0 + 0.5 })
        func layer(_ gamma: [Double], _ beta: [Double]) throws -> BatchNormTraining<Double> {
            try BatchNormTraining(gamma: gamma, beta: beta, runningMean: running.mean, runningVariance: running.variance)
        }
        func loss(_ x: [Double], _ gamma: [Double], _ beta: [Double]) throws -> Double {
            var bn = try layer(gamma, beta)
            return dot(try bn.forward(x, statistics: statistics).y, r)
        }
        var bn = try layer(gamma, beta)
        let saved = try bn.forward(x, statistics: statistics).saved
        let (dx, dGamma, dBeta) = try bn.backward(saved, dy: r)
        assertClose(dx, try numericGradient(x) { try loss($0, gamma, beta) }, rtol: 1e-6, atol: 1e-7, "dx")
        assertClose(dGamma, try numericGradient(gamma) { try loss(x, $0, beta) }, rtol: 1e-6, atol: 1e-7, "dγ")
        assertClose(dBeta, try numericGradient(beta) { try loss(x, gamma, $0) }, rtol: 1e-6, atol: 1e-7, "dβ")
    }

    @Test(arguments: TrainableActivation.allCases)
    func activation(_ a: TrainableActivation) throws {
        var rng = SplitMix64(seed: 13)
        // Points away from the kinks (0, 6, ±3), where f′ is one-sided.
        let x = random(64, &rng).map { $0 * 8 }.filter { v in [0.0, 6, 3, -3].allSatisfy { abs(v - $0) > 1e-3 } }
        let r = random(x.count, &rng)
        assertClose(try a.backward(x: x, dy: r), numericGradient(x) { dot(a.forward($0), r) }, rtol: 1e-6,
                    atol: 1e-7, a.rawValue)
    }

    @Test func layoutOps() throws {
        var rng = SplitMix64(seed: 17)
        let x = random(2 * 3 * 2 * 4, &rng)
        let rPool = random(2 * 4, &rng), rUp = random(x.count * 4, &rng)
        assertClose(try LayoutOps.globalAveragePoolBackward(rPool, batch: 2, pixels: 6, channels: 4),
                    try numericGradient(x) { dot(try LayoutOps.globalAveragePool($0, batch: 2, pixels: 6, channels: 4), rPool) },
                    rtol: 1e-6, atol: 1e-7, "global average pool")
        assertClose(try LayoutOps.upsampleBackward(rUp, batch: 2, height: 3, width: 2, channels: 4, factor: 2),
                    try numericGradient(x) { dot(try LayoutOps.upsample($0, batch: 2, height: 3, width: 2, channels: 4, factor: 2), rUp) },
                    rtol: 1e-6, atol: 1e-7, "upsample")
        let y = random(6 * 3, &rng), rCat = random(6 * 7, &rng)
        let parts = try LayoutOps.concatChannelsBackward(rCat, channels: [4, 3])
        assertClose(parts[0], try numericGradient(x.prefix(24).map { $0 }) { dot(try LayoutOps.concatChannels([$0, y], channels: [4, 3]), rCat) },
                    rtol: 1e-6, atol: 1e-7, "concat first")
        assertClose(parts[1], try numericGradient(y) { dot(try LayoutOps.concatChannels([x.prefix(24).map { $0 }, $0], channels: [4, 3]), rCat) },
                    rtol: 1e-6, atol: 1e-7, "concat second")
    }
}

/// Values in [−1, 1).
func random(_ n: Int, _ rng: inout SplitMix64) -> [Double] {
    (0..<n).map { _ in Double(rng.next() >> 11) / Double(1 << 52) - 1 }
}

func dot(_ a: [Double], _ b: [Double]) -> Double { zip(a, b).reduce(0) { $0 + $1.0 * $1.1 } }

/// ∂f/∂xᵢ by central differences, every element.
func numericGradient(_ x: [Double], h: Double = 1e-6, _ f: ([Double]) throws -> Double) rethrows -> [Double] {
    var probe = x
    return try x.indices.map { i in
        probe[i] = x[i] + h
        let up = try f(probe)
        probe[i] = x[i] - h
        let down = try f(probe)
        probe[i] = x[i]
        return (up - down) / (2 * h)
    }
}

@Suite struct SoftmaxCrossEntropyGradientTests {
    @Test func gradientIsTheLossDerivative() throws {
        var rng = SplitMix64(seed: 19)
        let labels = [2, 0, 1, 2], logits = random(labels.count * 3, &rng).map { $0 * 4 }
        let (_, gradient) = try SoftmaxCrossEntropy.lossAndGradient(logits: logits, labels: labels, classes: 3)
        assertClose(gradient, try numericGradient(logits) {
            try SoftmaxCrossEntropy.lossAndGradient(logits: $0, labels: labels, classes: 3).loss
        }, rtol: 1e-6, atol: 1e-7, "dlogits")
        #expect(throws: TrainError.labelOutOfRange(what: "softmax cross-entropy", row: 1, label: 3, classes: 3)) {
            try SoftmaxCrossEntropy.lossAndGradient(logits: logits, labels: [0, 3, 0, 0], classes: 3)
        }
    }
}
