import MLToolCore

/// Greedy non-maximum suppression as docs/FORMAT.md section 4.4 defines it (ONNX NonMaxSuppression's rule,
/// which Ultralytics and torchvision share): highest score first, ties by the lower index; a box is suppressed when
/// its IoU with a kept box is above the threshold.
public enum NonMaxSuppression {
    /// IoU of two corner boxes in Double; 0 when they do not overlap or either is empty.
    @inline(__always)
    static func iou(_ a: (Double, Double, Double, Double), _ b: (Double, Double, Double, Double)) -> Double {
        let w = min(a.2, b.2) - max(a.0, b.0), h = min(a.3, b.3) - max(a.1, b.1)
        guard w > 0, h > 0 else { return 0 }
        let areaA = (a.2 - a.0) * (a.3 - a.1), areaB = (b.2 - b.0) * (b.3 - b.1)
        guard areaA > 0, areaB > 0 else { return 0 }
        let inter = w * h, union = areaA + areaB - inter
        return union > 0 ? inter / union : 0
    }

    /// The candidates `settings` keeps, in descending score order.
    public static func select(_ candidates: [DetectionCandidate], settings: NMSSettings) -> [DetectionCandidate] {
        let threshold = settings.confidenceThreshold
        let order = candidates.indices.filter { candidates[$0].score > threshold }.sorted {
            let a = candidates[$0], b = candidates[$1]
            return a.score != b.score ? a.score > b.score : a.index < b.index
        }
        var kept: [DetectionCandidate] = []
        var keptBoxes: [(Double, Double, Double, Double)] = [], keptClass: [Int] = []
        var perClass: [Int: Int] = [:]
        let iouThreshold = Double(settings.iouThreshold)
        for i in order {
            if kept.count >= settings.maxDetections { break }
            let c = candidates[i]
            if let m = settings.maxPerClass, perClass[c.classIndex, default: 0] >= m { continue }
            let box = (Double(c.x1), Double(c.y1), Double(c.x2), Double(c.y2))
            var suppressed = false
            for k in keptBoxes.indices where !settings.perClass || keptClass[k] == c.classIndex {
                if iou(box, keptBoxes[k]) > iouThreshold { suppressed = true; break }
            }
            if suppressed { continue }
            kept.append(c)
            keptBoxes.append(box); keptClass.append(c.classIndex)
            perClass[c.classIndex, default: 0] += 1
        }
        return kept
    }

    /// ONNX NonMaxSuppression's output for boxes (N, B, 4) and scores (N, C, B): rows (batch, class, box) in
    /// batch, class, selection order. Every box competes in every class (unlike `select`, where a box takes its
    /// best class). `centerPointBox`: boxes are (x centre, y centre, width, height), else two corners
    /// (y1, x1, y2, x2) in either order.
    public static func onnxSelectedIndices(boxes: Tensor, scores: Tensor, centerPointBox: Bool, maxPerClass: Int,
                                           iouThreshold: Float, scoreThreshold: Float?) throws -> [[Int]] {
        guard boxes.rank == 3, boxes.shape[2] == 4 else {
            throw DetectError.badOutput(tensor: "boxes", expected: "(N, B, 4)", actual: boxes.shape)
        }
        let (n, b) = (boxes.shape[0], boxes.shape[1])
        guard scores.rank == 3, scores.shape[0] == n, scores.shape[2] == b else {
            throw DetectError.badOutput(tensor: "scores", expected: "(\(n), C, \(b))", actual: scores.shape)
        }
        let classes = scores.shape[1]
        var out: [[Int]] = []
        for bi in 0..<n {
            let corners = (0..<b).map { i -> (Double, Double, Double, Double) in
                let v = (0..<4).map { Double(boxes.data[(bi * b + i) * 4 + $0]) }
                if centerPointBox { return (v[0] - v[2] / 2, v[1] - v[3] / 2, v[0] + v[2] / 2, v[1] + v[3] / 2) }
                return (min(v[1], v[3]), min(v[0], v[2]), max(v[1], v[3]), max(v[0], v[2]))
            }
            for c in 0..<classes {
                let s = { (i: Int) in scores.data[(bi * classes + c) * b + i] }
                let order = (0..<b).filter { scoreThreshold == nil || s($0) > scoreThreshold! }
                    .sorted { s($0) != s($1) ? s($0) > s($1) : $0 < $1 }
                var kept: [Int] = []
                for i in order {
                    if kept.count >= maxPerClass { break }
                    if kept.contains(where: { iou(corners[i], corners[$0]) > Double(iouThreshold) }) { continue }
                    kept.append(i)
                    out.append([bi, c, i])
                }
            }
        }
        return out
    }
}
