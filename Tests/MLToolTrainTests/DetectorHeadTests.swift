import Foundation
@testable import MLToolTrain
import MLToolCore
import Testing

/// The detector head's analytic gradients against central finite differences (the scalar reference for its
/// back-propagation), in double-checked float: the loss (quality focal + GIoU) and the three convolutions.
@Suite struct DetectorHeadTests {
    /// A tiny head on a 3×3 map of 2 items with two classes: cells 0 and 4 of item 0 and cell 8 of item 1 positive.
    static func setup() -> (DetectorHead, [Float], [Int32], [Float]) {
        let head = DetectorHead(inputs: 5, reduced: 3, hidden: 4, classes: 2, side: 3, seed: 7)
        var rng = SplitMix64(seed: 3)
        let x = (0..<(2 * 9 * 5)).map { _ in rng.nextUnit() * 2 - 1 }
        var cls = [Int32](repeating: -1, count: 18)
        cls[0] = 0; cls[4] = 1; cls[17] = 1
        let dist = (0..<(18 * 4)).map { _ in 0.5 + rng.nextUnit() * 2 }
        return (head, x, cls, dist)
    }

    static func totalLoss(_ head: DetectorHead, _ x: [Float], _ cls: [Int32], _ dist: [Float]) -> Double {
        let act = x.withUnsafeBufferPointer { head.forward($0.baseAddress!, items: 2) }
        var g = [Float](repeating: 0, count: act.y.count)
        let l = act.y.withUnsafeBufferPointer { y in
            cls.withUnsafeBufferPointer { c in dist.withUnsafeBufferPointer { d in
                head.loss(y.baseAddress!, rows: 18, classTarget: c.baseAddress!, distances: d.baseAddress!, normalizer: 3, grad: &g)
            } }
        }
        return l.classes + l.boxes
    }

    @Test func giouGradientMatchesFiniteDifferences() {
        let t: (Float, Float, Float, Float) = (1.5, 0.7, 2.2, 1.1)
        for p in [(Float(1.0), Float(0.9), Float(1.8), Float(1.4)), (2.5, 0.2, 0.6, 2.0), (1.5, 0.7, 2.2, 1.1)] {
            let (_, g, _) = DetectorHead.giou(p, t)
            let analytic = [g.0, g.1, g.2, g.3]
            for j in 0..<4 {
                var hi = [p.0, p.1, p.2, p.3], lo = hi
                hi[j] += 1e-3; lo[j] -= 1e-3
                let fh = DetectorHead.giou((hi[0], hi[1], hi[2], hi[3]), t).0, fl = DetectorHead.giou((lo[0], lo[1], lo[2], lo[3]), t).0
                let numeric = (fh - fl) / 2e-3
                #expect(abs(numeric - analytic[j]) < 2e-3, "side \(j) of \(p): numeric \(numeric), analytic \(analytic[j])")
            }
        }
        // A perfect box: loss 0, IoU 1.
        let (l, _, iou) = DetectorHead.giou(t, t)
        #expect(abs(l) < 1e-6 && abs(iou - 1) < 1e-6)
    }

    @Test func weightGradientsMatchFiniteDifferences() {
        let (head, x, cls, dist) = Self.setup()
        let act = x.withUnsafeBufferPointer { head.forward($0.baseAddress!, items: 2) }
        var g = [Float](repeating: 0, count: act.y.count)
        _ = act.y.withUnsafeBufferPointer { y in
            cls.withUnsafeBufferPointer { c in dist.withUnsafeBufferPointer { d in
                head.loss(y.baseAddress!, rows: 18, classTarget: c.baseAddress!, distances: d.baseAddress!, normalizer: 3, grad: &g)
            } }
        }
        // The quality target (the IoU) is held fixed in the class loss, so compare the box loss and the class loss
        // of a head whose boxes are frozen: perturb only weights, and recompute the loss with the same targets.
        let grads = x.withUnsafeBufferPointer { xp in g.withUnsafeBufferPointer { head.gradients(xp.baseAddress!, items: 2, act, $0.baseAddress!) } }
        var checked = 0
        for layer in 0..<6 {
            let count = head.parameters[layer].count
            for i in stride(from: 0, to: count, by: max(1, count / 7)) {
                var hi = head, lo = head
                hi.perturb(layer: layer, index: i, by: 1e-3)
                lo.perturb(layer: layer, index: i, by: -1e-3)
                let numeric = (Self.fixedQualityLoss(hi, x, cls, dist, reference: head) - Self.fixedQualityLoss(lo, x, cls, dist, reference: head)) / 2e-3
                let analytic = Double(grads[layer][i])
                #expect(abs(numeric - analytic) <= 2e-3 + 2e-2 * abs(analytic), "layer \(layer) [\(i)]: numeric \(numeric), analytic \(analytic)")
                checked += 1
            }
        }
        #expect(checked >= 30)
    }

    /// The loss of `head` with the class-quality targets taken from `reference`'s boxes (as training holds them).
    static func fixedQualityLoss(_ head: DetectorHead, _ x: [Float], _ cls: [Int32], _ dist: [Float], reference: DetectorHead) -> Double {
        let ref = x.withUnsafeBufferPointer { reference.forward($0.baseAddress!, items: 2) }
        let act = x.withUnsafeBufferPointer { head.forward($0.baseAddress!, items: 2) }
        var total = 0.0
        for r in 0..<18 {
            let o = r * head.outputs, t = Int(cls[r])
            var quality: Float = 0
            if t >= 0 {
                let d = (dist[r * 4], dist[r * 4 + 1], dist[r * 4 + 2], dist[r * 4 + 3])
                quality = max(0, DetectorHead.giou((ref.y[o], ref.y[o + 1], ref.y[o + 2], ref.y[o + 3]), d).2)
                total += Double(head.boxWeight * DetectorHead.giou((act.y[o], act.y[o + 1], act.y[o + 2], act.y[o + 3]), d).0)
            }
            for c in 0..<(head.outputs - 4) {
                let p = 1 / (1 + exp(-Double(act.y[o + 4 + c]))), q = Double(c == t ? quality : 0)
                total += (p - q) * (p - q) * -(q * log(p) + (1 - q) * log(1 - p))
            }
        }
        return total / 3
    }

    @Test func trainingLowersTheLossAndIsDeterministic() {
        let (head, x, cls, dist) = Self.setup()
        func run() -> (DetectorHead, Double) {
            var h = head
            for _ in 0..<200 {
                let act = x.withUnsafeBufferPointer { h.forward($0.baseAddress!, items: 2) }
                var g = [Float](repeating: 0, count: act.y.count)
                _ = act.y.withUnsafeBufferPointer { y in
                    cls.withUnsafeBufferPointer { c in dist.withUnsafeBufferPointer { d in
                        h.loss(y.baseAddress!, rows: 18, classTarget: c.baseAddress!, distances: d.baseAddress!, normalizer: 3, grad: &g)
                    } }
                }
                x.withUnsafeBufferPointer { xp in g.withUnsafeBufferPointer { h.update(xp.baseAddress!, items: 2, act, $0.baseAddress!, lr: 0.01, decay: 0) } }
            }
            return (h, Self.totalLoss(h, x, cls, dist))
        }
        let before = Self.totalLoss(head, x, cls, dist)
        let (a, la) = run(), (b, lb) = run()
        #expect(la < before * 0.5, "loss \(before) → \(la)")
        #expect(la == lb && a.parameters == b.parameters)
    }
}
