import Foundation
import MLToolCore
import Testing
import MLToolEngine
import MLToolTestSupport

extension GraphBuilder {
    /// An EfficientNet-Lite0-shaped network with random weights: 3×3/2 stem, 16 MBConv blocks (1×1 expand, k×k
    /// depthwise, 1×1 project, residual add), 1280-wide head conv, global pool, dense to 1000 classes. ReLU6
    /// everywhere, no squeeze-excite; batchNorm already folded into conv biases, as an imported model ends up.
    static func efficientNetLite0(size: Int = 224, seed: UInt64 = 42) -> Model {
        var g = GraphBuilder(seed: seed, input: [-1, size, size, 3], name: "images")
        var n = size
        func pads(_ k: Int, _ s: Int) -> [Int] {
            let p = samePads(n, k: k, s: s)
            return [p[0], p[0], p[1], p[1]]
        }
        var x = g.conv("images", cin: 3, cout: 32, k: (3, 3), stride: 2, pads: pads(3, 2), act: .relu6)
        n = (n + 1) / 2
        var c = 32
        // (expand ratio, kernel, stride, output channels, repeats)
        let stages = [(1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3),
                      (6, 5, 1, 112, 3), (6, 5, 2, 192, 4), (6, 3, 1, 320, 1)]
        for (e, k, s0, out, repeats) in stages {
            for r in 0..<repeats {
                let s = r == 0 ? s0 : 1
                var h = x
                if e != 1 { h = g.conv(h, cin: c, cout: c * e, k: (1, 1), act: .relu6) }
                h = g.conv(h, cin: c * e, cout: c * e, k: (k, k), stride: s, pads: pads(k, s), groups: c * e, act: .relu6)
                n = (n + s - 1) / s
                h = g.conv(h, cin: c * e, cout: out, k: (1, 1))
                x = s == 1 && out == c ? g.node(.add, [x, h]) : h
                c = out
            }
        }
        x = g.conv(x, cin: c, cout: 1280, k: (1, 1), act: .relu6)
        let pooled = g.node(.globalAvgPool, [x], name: "pool")
        let features = g.node(.flatten, [pooled], name: "features")
        let logits = g.dense(features, 1280, 1000)
        let probs = g.node(.softmax, [logits], name: "probs")
        return g.model(outputs: [probs])
    }
}

@Suite struct EfficientNetLiteTests {
    @Test func smallResolutionFastMatchesReference() throws {
        try checkSmallResolution()
    }

    func checkSmallResolution() throws {
        let model = GraphBuilder.efficientNetLite0(size: 48)
        var g = GraphBuilder(seed: 8, input: [])
        let input = g.input([2, 48, 48, 3])
        let (fast, ref) = try bothModes(model, ["images": input], outputs: ["features:0", "probs:0"], threads: 2)
        let f = try #require(fast["features:0"]), r = try #require(ref["features:0"])
        #expect(f.shape == [2, 1280])
        assertClose(f, r, rtol: fastTolerance * 10, atol: fastTolerance * 10)
        assertClose(try #require(fast["probs:0"]), try #require(ref["probs:0"]), rtol: fastTolerance, atol: fastTolerance)
        // One image with 2 threads splits single ops (GEMM rows, depthwise rows) across threads instead.
        let one = Tensor(shape: [1, 48, 48, 3], data: Array(input.data[..<(48 * 48 * 3)]))
        let (f1, r1) = try bothModes(model, ["images": one], outputs: ["features:0"], threads: 2)
        assertClose(try #require(f1["features:0"]), try #require(r1["features:0"]), rtol: fastTolerance * 10, atol: fastTolerance * 10)
        let again = try Engine(model: model, threads: 2).run(["images": one], outputs: ["features:0"])
        #expect(again["features:0"] == f1["features:0"])
    }

    @Test func concurrentRunsOnOneEngineAgree() throws {
        try checkConcurrentRuns()
    }

    func checkConcurrentRuns() throws {
        let model = GraphBuilder.efficientNetLite0(size: 40)
        let engine = try Engine(model: model, threads: 2)
        var g = GraphBuilder(seed: 21, input: [])
        let inputs = (0..<4).map { _ in g.input([1, 40, 40, 3]) }
        let serial = try inputs.map { try #require(try engine.run(["images": $0])["probs:0"]) }
        final class Results: @unchecked Sendable { var values = [Tensor?](repeating: nil, count: 8) }
        let results = Results()
        let lock = NSLock()
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            let y = try? engine.run(["images": inputs[i % 4]])["probs:0"]
            lock.lock(); results.values[i] = y; lock.unlock()
        }
        for i in 0..<8 { #expect(results.values[i] == serial[i % 4]) }
    }
}
