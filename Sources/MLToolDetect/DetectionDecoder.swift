import Foundation
import MLToolCore

/// Turns a detector's graph outputs into candidate boxes (docs/FORMAT.md section 4.4): corners in input pixels,
/// each with its best class (ties: the lower index) and score; only candidates scoring above `minScore` are kept.
public struct DetectionDecoder: Sendable {
    public let config: DetectionConfig
    /// The model input's width and height (for normalised box coordinates).
    public let inputWidth: Int
    public let inputHeight: Int

    public init(config: DetectionConfig, inputWidth: Int, inputHeight: Int) {
        self.config = config; self.inputWidth = inputWidth; self.inputHeight = inputHeight
    }

    @inline(__always)
    static func sigmoid(_ x: Float) -> Float { 1 / (1 + exp(-x)) }

    /// The candidates of batch item `item`.
    public func decode(_ outputs: [String: Tensor], item: Int, minScore: Float) throws -> [DetectionCandidate] {
        var out: [DetectionCandidate] = []
        switch config.decoder {
        case "anchorGrid": for h in config.heads ?? [] { try anchorGrid(h, outputs, item, minScore, &out) }
        case "anchorFree": for h in config.heads ?? [] { try anchorFree(h, outputs, item, minScore, &out) }
        default: try boxes(outputs, item, minScore, &out)
        }
        return out
    }

    private func tensor(_ name: String, _ outputs: [String: Tensor], rank: Int, item: Int) throws -> Tensor {
        guard let t = outputs[name] else { throw DetectError.badOutput(tensor: name, expected: "an output of the graph", actual: []) }
        guard t.rank == rank, item < t.shape[0] else {
            throw DetectError.badOutput(tensor: name, expected: "rank \(rank) with more than \(item) items", actual: t.shape)
        }
        return t
    }

    /// Best class among `count` logits or scores at `p` (stride `step`): index and value.
    @inline(__always)
    private func best(_ p: UnsafePointer<Float>, count: Int, step: Int = 1) -> (Int, Float) {
        var k = 0, v = p[0]
        var i = 1
        while i < count {
            let x = p[i &* step]
            if x > v || (v.isNaN && !x.isNaN) { v = x; k = i }
            i &+= 1
        }
        return (k, v)
    }

    // (N, H, W, A·(5 + C)), candidates in (anchor, y, x) order per head (the order of YOLOv5's decoded output).
    private func anchorGrid(_ h: DetectionHead, _ outputs: [String: Tensor], _ item: Int, _ minScore: Float,
                            _ out: inout [DetectionCandidate]) throws {
        let t = try tensor(h.tensor, outputs, rank: 4, item: item)
        let anchors = h.anchors ?? []
        let c = config.classCount, no = 5 + c
        let (gh, gw, ch) = (t.shape[1], t.shape[2], t.shape[3])
        guard ch == anchors.count * no else {
            throw DetectError.badOutput(tensor: h.tensor, expected: "(N, H, W, \(anchors.count * no))", actual: t.shape)
        }
        let s = Float(h.stride), v5 = config.boxEncoding == "yolov5"
        var index = out.last.map { $0.index + 1 } ?? 0
        t.data.withUnsafeBufferPointer { buf in
            guard let base = buf.baseAddress else { return }
            let img = base + item &* gh &* gw &* ch
            for (a, anchor) in anchors.enumerated() {
                for y in 0..<gh {
                    for x in 0..<gw {
                        defer { index += 1 }
                        let p = img + ((y &* gw &+ x) &* ch &+ a &* no)
                        let obj = Self.sigmoid(p[4])
                        if !(obj > minScore) { continue }
                        let (k, logit) = best(p + 5, count: c)
                        let score = obj * Self.sigmoid(logit)
                        if !(score > minScore) { continue }
                        let cx: Float, cy: Float, bw: Float, bh: Float
                        if v5 {
                            cx = (Self.sigmoid(p[0]) * 2 - 0.5 + Float(x)) * s
                            cy = (Self.sigmoid(p[1]) * 2 - 0.5 + Float(y)) * s
                            let sw = Self.sigmoid(p[2]) * 2, sh = Self.sigmoid(p[3]) * 2
                            bw = sw * sw * anchor[0]; bh = sh * sh * anchor[1]
                        } else {
                            cx = (Self.sigmoid(p[0]) + Float(x)) * s
                            cy = (Self.sigmoid(p[1]) + Float(y)) * s
                            bw = exp(p[2]) * anchor[0]; bh = exp(p[3]) * anchor[1]
                        }
                        out.append(DetectionCandidate(x1: cx - bw / 2, y1: cy - bh / 2, x2: cx + bw / 2, y2: cy + bh / 2,
                                                      classIndex: k, score: score, index: index))
                    }
                }
            }
        }
    }

    // (N, H, W, 4·regMax + C) or (N, H, W, 4 + C), candidates in (y, x) order per head.
    private func anchorFree(_ h: DetectionHead, _ outputs: [String: Tensor], _ item: Int, _ minScore: Float,
                            _ out: inout [DetectionCandidate]) throws {
        let t = try tensor(h.tensor, outputs, rank: 4, item: item)
        let c = config.classCount, bins = config.boxEncoding == "dfl" ? (config.regMax ?? 16) : 1
        let (gh, gw, ch) = (t.shape[1], t.shape[2], t.shape[3])
        guard ch == 4 * bins + c else {
            throw DetectError.badOutput(tensor: h.tensor, expected: "(N, H, W, \(4 * bins + c))", actual: t.shape)
        }
        let s = Float(h.stride)
        // σ is increasing: compare logits against the threshold's logit.
        let minLogit = minScore <= 0 ? -Float.infinity : minScore >= 1 ? Float.infinity : log(minScore / (1 - minScore))
        var index = out.last.map { $0.index + 1 } ?? 0
        t.data.withUnsafeBufferPointer { buf in
            guard let base = buf.baseAddress else { return }
            let img = base + item &* gh &* gw &* ch
            var e = [Float](repeating: 0, count: bins)
            for y in 0..<gh {
                for x in 0..<gw {
                    defer { index += 1 }
                    let p = img + (y &* gw &+ x) &* ch
                    let (k, logit) = best(p + 4 &* bins, count: c)
                    if !(logit >= minLogit) { continue }
                    let score = Self.sigmoid(logit)
                    if !(score > minScore) { continue }
                    var d: (Float, Float, Float, Float) = (0, 0, 0, 0)
                    for j in 0..<4 {
                        var v: Float
                        if bins == 1 {
                            v = p[j]
                        } else {
                            let q = p + j &* bins
                            var m = q[0]
                            for b in 1..<bins { m = max(m, q[b]) }
                            var sum: Float = 0
                            for b in 0..<bins { e[b] = exp(q[b] - m); sum += e[b] }
                            v = 0
                            for b in 0..<bins { v += Float(b) * e[b] }
                            v /= sum
                        }
                        switch j {
                        case 0: d.0 = v
                        case 1: d.1 = v
                        case 2: d.2 = v
                        default: d.3 = v
                        }
                    }
                    let ax = Float(x) + 0.5, ay = Float(y) + 0.5
                    out.append(DetectionCandidate(x1: (ax - d.0) * s, y1: (ay - d.1) * s, x2: (ax + d.2) * s, y2: (ay + d.3) * s,
                                                  classIndex: k, score: score, index: index))
                }
            }
        }
    }

    // (N, B, K) or (N, K, B), optional scores (N, B, C) or (N, C, B); candidates in box order.
    private func boxes(_ outputs: [String: Tensor], _ item: Int, _ minScore: Float, _ out: inout [DetectionCandidate]) throws {
        guard let spec = config.boxes else { return }
        let t = try tensor(spec.tensor, outputs, rank: 3, item: item)
        let c = config.classCount
        let nbk = spec.layout == "nbk"
        let k = 4 + (spec.scoresTensor == nil ? (spec.objectness ? 1 : 0) + c : 0)
        let b = nbk ? t.shape[1] : t.shape[2]
        guard (nbk ? t.shape[2] : t.shape[1]) == k else {
            throw DetectError.badOutput(tensor: spec.tensor, expected: nbk ? "(N, boxes, \(k))" : "(N, \(k), boxes)", actual: t.shape)
        }
        var scores: Tensor?
        if let st = spec.scoresTensor {
            let s = try tensor(st, outputs, rank: 3, item: item)
            let ncb = spec.scoresLayout == "ncb"
            guard (ncb ? s.shape[1] : s.shape[2]) == c, (ncb ? s.shape[2] : s.shape[1]) == b else {
                throw DetectError.badOutput(tensor: st, expected: ncb ? "(N, \(c), \(b))" : "(N, \(b), \(c))", actual: s.shape)
            }
            scores = s
        }
        let sigmoid = spec.scoreActivation == "sigmoid"
        let sx: Float = spec.normalized ? Float(inputWidth) : 1, sy: Float = spec.normalized ? Float(inputHeight) : 1
        let encoding = config.boxEncoding
        let objectness = spec.objectness && scores == nil
        t.data.withUnsafeBufferPointer { tb in
            guard let tp = tb.baseAddress else { return }
            let img = tp + item &* b &* k
            // Value j of box i.
            let step = nbk ? 1 : b
            func value(_ i: Int) -> UnsafePointer<Float> { nbk ? img + i &* k : img + i }
            for i in 0..<b {
                let v = value(i)
                var score: Float, cls: Int
                if let s = scores {
                    let ncb = spec.scoresLayout == "ncb"
                    (cls, score) = s.data.withUnsafeBufferPointer { sb in
                        let p = sb.baseAddress! + item &* b &* c
                        return ncb ? best(p + i, count: c, step: b) : best(p + i &* c, count: c)
                    }
                    if sigmoid { score = Self.sigmoid(score) }
                } else {
                    let first = 4 + (objectness ? 1 : 0)
                    (cls, score) = best(v + first &* step, count: c, step: step)
                    if sigmoid { score = Self.sigmoid(score) }
                    if objectness { score *= sigmoid ? Self.sigmoid(v[4 &* step]) : v[4 &* step] }
                }
                if !(score > minScore) { continue }
                let (a0, a1, a2, a3) = (v[0], v[step], v[2 &* step], v[3 &* step])
                var x1: Float, y1: Float, x2: Float, y2: Float
                switch encoding {
                case "cxcywh": (x1, y1, x2, y2) = (a0 - a2 / 2, a1 - a3 / 2, a0 + a2 / 2, a1 + a3 / 2)
                case "yxyx": (x1, y1, x2, y2) = (min(a1, a3), min(a0, a2), max(a1, a3), max(a0, a2))
                default: (x1, y1, x2, y2) = (min(a0, a2), min(a1, a3), max(a0, a2), max(a1, a3))
                }
                out.append(DetectionCandidate(x1: x1 * sx, y1: y1 * sy, x2: x2 * sx, y2: y2 * sy, classIndex: cls, score: score, index: i))
            }
        }
    }
}
