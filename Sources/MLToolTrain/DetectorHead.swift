import COpenBLAS
import Foundation
import MLToolCore

/// A detector head for one square feature map of `side` × `side` cells: three convolutions shared by every cell —
/// 1×1 from C feature channels to `reduced` (ReLU), 3×3 (padding 1) to `hidden` (ReLU), 1×1 to 4 box distances
/// (left, top, right, bottom, in cells, from the cell's centre) and one logit per class — the "anchorFree" / "ltrb"
/// decoder of docs/FORMAT.md 4.4. The 3×3 layer lets a cell see its neighbours, which frozen features need to place
/// box edges.
///
/// Trained by Adam; all products are single-threaded SGEMMs and all sums run in a fixed order, so the same data and
/// seed give the same bits. Weights are row-major as the IR's convolution weights (KH, KW, C, OC).
public struct DetectorHead: Sendable {
    public let inputs: Int
    public let reduced: Int
    public let hidden: Int
    public let outputs: Int
    public let side: Int
    public private(set) var w1: [Float], b1: [Float], w2: [Float], b2: [Float], w3: [Float], b3: [Float]
    private var moments: [[Float]]
    private var step = 0
    /// The weight of the box loss against the class loss.
    public var boxWeight: Float = 2

    /// A head with seeded He-uniform weights, a small last layer, class biases at a prior of 1 % and distances
    /// starting at `initialDistance` cells.
    public init(inputs: Int, reduced: Int, hidden: Int, classes: Int, side: Int, initialDistance: Float = 2, seed: UInt64) {
        self.inputs = inputs; self.reduced = reduced; self.hidden = hidden; outputs = 4 + classes; self.side = side
        var rng = SplitMix64(seed: seed)
        func uniform(_ n: Int, _ a: Float) -> [Float] { (0..<n).map { _ in (rng.nextUnit() * 2 - 1) * a } }
        w1 = uniform(inputs * reduced, (6 / Float(inputs)).squareRoot())
        b1 = [Float](repeating: 0, count: reduced)
        w2 = uniform(9 * reduced * hidden, (6 / Float(9 * reduced)).squareRoot())
        b2 = [Float](repeating: 0, count: hidden)
        w3 = uniform(hidden * outputs, (1 / Float(hidden)).squareRoot() * 0.1)
        b3 = (0..<outputs).map { $0 < 4 ? initialDistance : -log(99) }
        moments = [w1, b1, w2, b2, w3, b3].flatMap { [[Float](repeating: 0, count: $0.count), [Float](repeating: 0, count: $0.count)] }
    }

    /// What a forward pass keeps for the backward one.
    public struct Activations {
        var a1: [Float], patches: [Float], a2: [Float]
        public var y: [Float]
    }

    /// The outputs (items · side², outputs) for `items` maps x (items · side², inputs), cells in row-major order.
    public func forward(_ x: UnsafePointer<Float>, items: Int) -> Activations {
        let rows = items &* side &* side
        guard rows > 0 else { return Activations(a1: [], patches: [], a2: [], y: []) }
        var a1 = [Float](repeating: 0, count: rows &* reduced)
        Self.dense(x, rows: rows, inputs, w1, b1, reduced, into: &a1, relu: true)
        let patches = im2col(a1, items: items)
        var a2 = [Float](repeating: 0, count: rows &* hidden)
        patches.withUnsafeBufferPointer { Self.dense($0.baseAddress!, rows: rows, 9 &* reduced, w2, b2, hidden, into: &a2, relu: true) }
        var y = [Float](repeating: 0, count: rows &* outputs)
        a2.withUnsafeBufferPointer { Self.dense($0.baseAddress!, rows: rows, hidden, w3, b3, outputs, into: &y, relu: false) }
        return Activations(a1: a1, patches: patches, a2: a2, y: y)
    }

    /// out = x·w + b (rows × n), then ReLU when asked.
    static func dense(_ x: UnsafePointer<Float>, rows: Int, _ k: Int, _ w: [Float], _ b: [Float], _ n: Int, into out: inout [Float],
                      relu: Bool) {
        guard rows > 0 else { return }
        out.withUnsafeMutableBufferPointer { o in
            guard let ob = o.baseAddress else { return }
            for r in 0..<rows { (ob + r &* n).update(from: b, count: n) }
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Int32(rows), Int32(n), Int32(k), 1, x, Int32(k), w, Int32(n), 1, ob, Int32(n))
            if relu { for i in 0..<(rows &* n) where ob[i] < 0 { ob[i] = 0 } }
        }
    }

    /// Calls `body(cell, patch)` for every cell and each of its 3×3 neighbours inside the map: `cell` is the
    /// neighbour's offset in a (items · side², reduced) map, `patch` the offset of its slot in the cell's row of
    /// the (items · side², 9 · reduced) patch matrix, column (ky·3 + kx)·reduced + c.
    @inline(__always)
    func forEachNeighbour(items: Int, _ body: (Int, Int) -> Void) {
        let r = reduced, s = side
        for n in 0..<items {
            for y in 0..<s {
                for x in 0..<s {
                    let row = (n &* s &+ y) &* s &+ x
                    for ky in 0..<3 {
                        let yy = y &+ ky &- 1
                        guard yy >= 0, yy < s else { continue }
                        for kx in 0..<3 {
                            let xx = x &+ kx &- 1
                            guard xx >= 0, xx < s else { continue }
                            body(((n &* s &+ yy) &* s &+ xx) &* r, row &* 9 &* r &+ (ky &* 3 &+ kx) &* r)
                        }
                    }
                }
            }
        }
    }

    /// Each cell's 3×3 neighbourhood of `a` (zero outside the map): rows × (9 · reduced).
    func im2col(_ a: [Float], items: Int) -> [Float] {
        let r = reduced
        var p = [Float](repeating: 0, count: items &* side &* side &* 9 &* r)
        a.withUnsafeBufferPointer { ab in
            p.withUnsafeMutableBufferPointer { pb in
                forEachNeighbour(items: items) { cell, patch in for c in 0..<r { pb[patch &+ c] = ab[cell &+ c] } }
            }
        }
        return p
    }

    /// The adjoint of `im2col`: patch gradients summed back onto the cells they came from.
    func col2im(_ g: [Float], items: Int) -> [Float] {
        let r = reduced
        var a = [Float](repeating: 0, count: items &* side &* side &* r)
        g.withUnsafeBufferPointer { gb in
            a.withUnsafeMutableBufferPointer { ab in
                forEachNeighbour(items: items) { cell, patch in for c in 0..<r { ab[cell &+ c] += gb[patch &+ c] } }
            }
        }
        return a
    }

    /// The loss of outputs `y` against per-row targets — `classTarget` (the class index, or −1 for background) and
    /// the four distances of a positive row — divided by `normalizer` (the batch's positive count). Writes
    /// d(loss)/d(y) into `grad` and returns (class loss, box loss).
    ///
    /// Classes: quality focal loss (Li et al., GFL, 2020), binary cross-entropy against a soft target scaled by
    /// |target − p|²: the target of a positive cell's class is the IoU of its predicted box with the true one (held
    /// fixed), every other target 0, so a class score ranks boxes by how well they fit — what NMS and mAP need.
    /// Boxes: GIoU loss of the positive cells, weighted `boxWeight`.
    public func loss(_ y: UnsafePointer<Float>, rows: Int, classTarget: UnsafePointer<Int32>, distances: UnsafePointer<Float>,
                     normalizer: Float, grad: UnsafeMutablePointer<Float>) -> (classes: Double, boxes: Double) {
        let classes = outputs &- 4
        var classLoss = 0.0, boxLoss = 0.0
        for r in 0..<rows {
            let o = r &* outputs
            let t = Int(classTarget[r])
            var quality: Float = 0
            if t < 0 {
                for j in 0..<4 { grad[o &+ j] = 0 }
            } else {
                let (l, g, iou) = Self.giou((y[o], y[o &+ 1], y[o &+ 2], y[o &+ 3]),
                                            (distances[r &* 4], distances[r &* 4 &+ 1], distances[r &* 4 &+ 2], distances[r &* 4 &+ 3]))
                quality = max(iou, 0)
                boxLoss += Double(boxWeight * l)
                grad[o] = boxWeight * g.0 / normalizer; grad[o &+ 1] = boxWeight * g.1 / normalizer
                grad[o &+ 2] = boxWeight * g.2 / normalizer; grad[o &+ 3] = boxWeight * g.3 / normalizer
            }
            for c in 0..<classes {
                let z = y[o &+ 4 &+ c]
                let p = 1 / (1 + exp(-z))
                let pc = min(max(p, 1e-7), 1 - 1e-7)
                let target: Float = c == t ? quality : 0
                let bce = -(target * log(pc) + (1 - target) * log(1 - pc))
                let d = p - target
                classLoss += Double(d * d * bce)
                // d/dz of (p − t)²·BCE = 2(p − t)·p(1 − p)·BCE + (p − t)²·(p − t).
                grad[o &+ 4 &+ c] = (2 * d * p * (1 - p) * bce + d * d * d) / normalizer
            }
        }
        return (classLoss / Double(normalizer), boxLoss / Double(normalizer))
    }

    /// 1 − GIoU of a predicted box and a target box, both as distances (left, top, right, bottom) from the same
    /// point, its gradient with respect to the predicted distances, and the boxes' IoU. Predicted distances below a small floor
    /// count as the floor (gradient 0 there pushes nothing further down; a positive gradient still pulls them up).
    public static func giou(_ p: (Float, Float, Float, Float), _ t: (Float, Float, Float, Float)) -> (Float, (Float, Float, Float, Float), Float) {
        let floor: Float = 1e-3
        let l = max(p.0, floor), tp = max(p.1, floor), r = max(p.2, floor), b = max(p.3, floor)
        let areaP = (l + r) * (tp + b), areaT = (t.0 + t.2) * (t.1 + t.3)
        let iw = min(l, t.0) + min(r, t.2), ih = min(tp, t.1) + min(b, t.3)
        let inter = iw * ih
        let union = areaP + areaT - inter
        let ew = max(l, t.0) + max(r, t.2), eh = max(tp, t.1) + max(b, t.3)
        let enclosing = ew * eh
        let iou = inter / union
        let loss = 1 - (iou - (enclosing - union) / enclosing)
        // d/d(side): the area, the intersection and the enclosing box each depend on it through one factor.
        func side(_ v: Float, _ target: Float, across: Float, iAcross: Float, eAcross: Float) -> Float {
            let dArea = across
            let dInter = v < target ? iAcross : 0
            let dEnclosing = v > target ? eAcross : 0
            let dUnion = dArea - dInter
            let dIoU = (dInter * union - inter * dUnion) / (union * union)
            let dTerm = (dUnion * enclosing - union * dEnclosing) / (enclosing * enclosing)
            return -(dIoU + dTerm)
        }
        var g = (side(l, t.0, across: tp + b, iAcross: ih, eAcross: eh), side(tp, t.1, across: l + r, iAcross: iw, eAcross: ew),
                 side(r, t.2, across: tp + b, iAcross: ih, eAcross: eh), side(b, t.3, across: l + r, iAcross: iw, eAcross: ew))
        // Below the floor only a pull upwards (negative gradient) passes.
        if p.0 < floor { g.0 = min(g.0, 0) }
        if p.1 < floor { g.1 = min(g.1, 0) }
        if p.2 < floor { g.2 = min(g.2, 0) }
        if p.3 < floor { g.3 = min(g.3, 0) }
        return (loss, g, iou)
    }

    /// The six parameter arrays in order: w1, b1, w2, b2, w3, b3.
    public var parameters: [[Float]] { [w1, b1, w2, b2, w3, b3] }

    /// Adds `delta` to one parameter (for gradient checks).
    mutating func perturb(layer: Int, index: Int, by delta: Float) {
        switch layer {
        case 0: w1[index] += delta
        case 1: b1[index] += delta
        case 2: w2[index] += delta
        case 3: b2[index] += delta
        case 4: w3[index] += delta
        default: b3[index] += delta
        }
    }

    /// d(loss)/d(parameters), in `parameters` order, from `g` (d loss / d outputs) of the forward pass `act` on
    /// inputs `x`.
    public func gradients(_ x: UnsafePointer<Float>, items: Int, _ act: Activations, _ g: UnsafePointer<Float>) -> [[Float]] {
        let rows = items &* side &* side
        guard rows > 0 else { return parameters.map { [Float](repeating: 0, count: $0.count) } }
        func weightGradient(_ a: UnsafePointer<Float>, _ k: Int, _ d: UnsafePointer<Float>, _ n: Int) -> [Float] {
            var out = [Float](repeating: 0, count: k &* n)
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Int32(k), Int32(n), Int32(rows), 1, a, Int32(k), d, Int32(n), 0, &out, Int32(n))
            return out
        }
        func biasGradient(_ d: UnsafePointer<Float>, _ n: Int) -> [Float] {
            var out = [Float](repeating: 0, count: n)
            for r in 0..<rows { for j in 0..<n { out[j] += d[r &* n &+ j] } }
            return out
        }
        /// d (rows × n) · wᵀ (n × k), masked by ReLU where `a` is 0.
        func back(_ d: UnsafePointer<Float>, _ w: [Float], _ k: Int, _ n: Int, mask a: [Float]?) -> [Float] {
            var out = [Float](repeating: 0, count: rows &* k)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Int32(rows), Int32(k), Int32(n), 1, d, Int32(n), w, Int32(n), 0, &out, Int32(k))
            if let a { for i in out.indices where a[i] <= 0 { out[i] = 0 } }
            return out
        }
        let gw3 = act.a2.withUnsafeBufferPointer { weightGradient($0.baseAddress!, hidden, g, outputs) }
        let gb3 = biasGradient(g, outputs)
        let g2 = back(g, w3, hidden, outputs, mask: act.a2)
        let (gw2, gb2, gp) = g2.withUnsafeBufferPointer { d in
            (act.patches.withUnsafeBufferPointer { weightGradient($0.baseAddress!, 9 &* reduced, d.baseAddress!, hidden) },
             biasGradient(d.baseAddress!, hidden), back(d.baseAddress!, w2, 9 &* reduced, hidden, mask: nil))
        }
        var g1 = col2im(gp, items: items)
        for i in g1.indices where act.a1[i] <= 0 { g1[i] = 0 }
        let (gw1, gb1) = g1.withUnsafeBufferPointer { (weightGradient(x, inputs, $0.baseAddress!, reduced), biasGradient($0.baseAddress!, reduced)) }
        return [gw1, gb1, gw2, gb2, gw3, gb3]
    }

    /// Back-propagates `g` (d loss / d outputs) of the forward pass `act` on inputs `x`, and takes one Adam step
    /// (learning rate `lr`, β 0.9 / 0.999, L2 weight decay `decay` on the weights, not the biases).
    public mutating func update(_ x: UnsafePointer<Float>, items: Int, _ act: Activations, _ g: UnsafePointer<Float>, lr: Float, decay: Float) {
        guard items &* side &* side > 0 else { return }
        let grads = gradients(x, items: items, act, g)
        step += 1
        let c1 = 1 - pow(Float(0.9), Float(step)), c2 = 1 - pow(Float(0.999), Float(step))
        func adam(_ p: inout [Float], _ grad: [Float], _ m: Int, weights: Bool) {
            for i in p.indices {
                let gi = grad[i] + (weights ? decay * p[i] : 0)
                moments[m][i] = 0.9 * moments[m][i] + 0.1 * gi
                moments[m + 1][i] = 0.999 * moments[m + 1][i] + 0.001 * gi * gi
                p[i] -= lr * (moments[m][i] / c1) / ((moments[m + 1][i] / c2).squareRoot() + 1e-8)
            }
        }
        adam(&w1, grads[0], 0, weights: true)
        adam(&b1, grads[1], 2, weights: false)
        adam(&w2, grads[2], 4, weights: true)
        adam(&b2, grads[3], 6, weights: false)
        adam(&w3, grads[4], 8, weights: true)
        adam(&b3, grads[5], 10, weights: false)
    }
}
