import MLToolCore

/// Average precision of one class.
public struct ClassAveragePrecision: Codable, Equatable, Sendable {
    public var label: String
    /// AP at IoU 0.5, and averaged over IoU 0.50, 0.55 … 0.95 (COCO); nil when the class has no ground truth.
    public var ap50: Double?
    public var ap50to95: Double?
    /// Ground-truth boxes and detections (at most `maxDetections` per photo) of the class.
    public var groundTruth: Int
    public var detections: Int
    /// At IoU 0.5 and the confidence threshold: true positives over detections, over ground truth.
    public var precision: Double
    public var recall: Double
    /// The interpolated precision at recall 0, 0.01 … 1 (COCO's 101 points) at IoU 0.5, for PR curves.
    public var precisionCurve: [Double]
}

/// Detection metrics of one model on one set of photos. JSON keys are stable.
public struct DetectionEvaluation: Codable, Equatable, Sendable {
    public var images: Int
    /// Mean over classes with ground truth (COCO's AP50 and AP).
    public var mAP50: Double
    public var mAP50to95: Double
    public var confidenceThreshold: Double
    /// All classes pooled, at IoU 0.5 and the confidence threshold.
    public var precision: Double
    public var recall: Double
    public var perClass: [ClassAveragePrecision]
}

/// COCO-style detection evaluation, defined as pycocotools' `COCOeval` (iouType "bbox", area "all", maxDets 100)
/// defines it: per photo and class, detections by descending score (stable) are matched to the unmatched ground
/// truth box of highest IoU ≥ t (a later box wins a tie); precision is made monotone from the right and read at the
/// 101 recall points 0, 0.01 … 1 (the first detection reaching each recall; 0 past the last); AP is the mean of those
/// points, mAP the mean over classes that have ground truth, mAP50:95 also over the ten IoU thresholds.
/// Precision / recall at a confidence threshold use the same IoU-0.5 matching, counting detections scoring ≥ it.
public enum DetectionMetrics {
    /// COCO's IoU thresholds, computed as numpy's `linspace(.5, .95, 10)` does.
    static let iouThresholds: [Double] = {
        let step = (0.95 - 0.5) / 9
        return (0..<10).map { $0 == 9 ? 0.95 : Double($0) * step + 0.5 }
    }()
    /// `linspace(0, 1, 101)`.
    static let recallPoints: [Double] = (0...100).map { $0 == 100 ? 1 : Double($0) * 0.01 }

    /// pycocotools' IoU of two boxes (0 without overlap).
    static func iou(_ d: BoundingBox, _ g: BoundingBox) -> Double {
        let w = min(d.x + d.width, g.x + g.width) - max(d.x, g.x)
        guard w > 0 else { return 0 }
        let h = min(d.y + d.height, g.y + g.height) - max(d.y, g.y)
        guard h > 0 else { return 0 }
        let i = w * h
        return i / (d.width * d.height + g.width * g.height - i)
    }

    /// Evaluates `detections[i]` against `truth[i]` for each photo i; classes are matched by label, in `labels`
    /// order (labels found only in the data are appended).
    public static func evaluate(truth: [[ObjectAnnotation]], detections: [[Detection]], labels: [String],
                                confidenceThreshold: Double = 0.5, maxDetections: Int = 100) -> DetectionEvaluation {
        precondition(truth.count == detections.count, "DetectionMetrics.evaluate: \(truth.count) photos of truth, \(detections.count) of detections")
        var classes = labels
        for l in Set(truth.flatMap { $0.map(\.label) } + detections.flatMap { $0.map(\.label) }).sorted() where !classes.contains(l) {
            classes.append(l)
        }
        let t = iouThresholds.count, r = recallPoints.count
        var perClass: [ClassAveragePrecision] = []
        var allAP50: [Double] = [], allAP: [Double] = []
        var pooledTP = 0, pooledDet = 0, pooledGT = 0
        for label in classes {
            let (scores, matched, gtCount) = matches(label, truth: truth, detections: detections, maxDetections: maxDetections)
            // Across photos by descending score (stable: photo order, then score order within a photo).
            let order = scores.indices.sorted { scores[$0] != scores[$1] ? scores[$0] > scores[$1] : $0 < $1 }
            let curves = (0..<t).map { precisionAtRecall(order, matched[$0], groundTruth: gtCount) }
            var tpAt = 0, detAt = 0
            for k in order where scores[k] >= confidenceThreshold {
                detAt += 1
                if matched[0][k] { tpAt += 1 }
            }
            pooledTP += tpAt; pooledDet += detAt; pooledGT += gtCount
            let ap50 = gtCount > 0 ? curves[0].reduce(0, +) / Double(r) : nil
            let ap = gtCount > 0 ? curves.map { $0.reduce(0, +) }.reduce(0, +) / Double(r * t) : nil
            if let a = ap50, let b = ap { allAP50.append(a); allAP.append(b) }
            perClass.append(ClassAveragePrecision(
                label: label, ap50: ap50, ap50to95: ap, groundTruth: gtCount, detections: scores.count,
                precision: detAt > 0 ? Double(tpAt) / Double(detAt) : 0, recall: gtCount > 0 ? Double(tpAt) / Double(gtCount) : 0,
                precisionCurve: curves[0]))
        }
        func mean(_ v: [Double]) -> Double { v.isEmpty ? 0 : v.reduce(0, +) / Double(v.count) }
        return DetectionEvaluation(
            images: truth.count, mAP50: mean(allAP50), mAP50to95: mean(allAP), confidenceThreshold: confidenceThreshold,
            precision: pooledDet > 0 ? Double(pooledTP) / Double(pooledDet) : 0,
            recall: pooledGT > 0 ? Double(pooledTP) / Double(pooledGT) : 0, perClass: perClass)
    }

    /// Per photo, the detections of `label` by descending confidence (at most `maxDetections`): their scores, whether
    /// each matches a ground-truth box at each IoU threshold, and the number of ground-truth boxes.
    private static func matches(_ label: String, truth: [[ObjectAnnotation]], detections: [[Detection]],
                                maxDetections: Int) -> (scores: [Double], matched: [[Bool]], groundTruth: Int) {
        let t = iouThresholds.count
        var scores: [Double] = []
        var matched: [[Bool]] = Array(repeating: [], count: t)
        var gtCount = 0
        for i in truth.indices {
            let gts = truth[i].filter { $0.label == label }.map(\.box)
            var dts = detections[i].enumerated().filter { $0.element.label == label }
            if gts.isEmpty && dts.isEmpty { continue }
            gtCount += gts.count
            dts.sort { $0.element.confidence != $1.element.confidence ? $0.element.confidence > $1.element.confidence : $0.offset < $1.offset }
            let kept = dts.prefix(maxDetections).map(\.element)
            let ious = kept.map { d in gts.map { iou(d.box, $0) } }
            for ti in 0..<t {
                var gtMatched = [Bool](repeating: false, count: gts.count)
                for (di, _) in kept.enumerated() {
                    var best = min(iouThresholds[ti], 1 - 1e-10), m = -1
                    for gi in gts.indices where !gtMatched[gi] {
                        if ious[di][gi] < best { continue }
                        best = ious[di][gi]; m = gi
                    }
                    if m >= 0 { gtMatched[m] = true }
                    matched[ti].append(m >= 0)
                }
            }
            scores += kept.map(\.confidence)
        }
        return (scores, matched, gtCount)
    }

    /// The interpolated precision at each recall point, over detections in `order` with their matches.
    private static func precisionAtRecall(_ order: [Int], _ matched: [Bool], groundTruth gtCount: Int) -> [Double] {
        let r = recallPoints.count
        var q = [Double](repeating: 0, count: r)
        guard gtCount > 0 else { return q }
        var tp = 0.0, fp = 0.0
        var rc: [Double] = [], pr: [Double] = []
        for k in order {
            if matched[k] { tp += 1 } else { fp += 1 }
            rc.append(tp / Double(gtCount))
            pr.append(tp / (fp + tp + Double.ulpOfOne))
        }
        if pr.count > 1 { for i in stride(from: pr.count - 1, to: 0, by: -1) where pr[i] > pr[i - 1] { pr[i - 1] = pr[i] } }
        for (ri, point) in recallPoints.enumerated() {
            // numpy searchsorted(side="left"): the first index with rc ≥ point.
            var lo = 0, hi = rc.count
            while lo < hi { let mid = (lo + hi) / 2; if rc[mid] < point { lo = mid + 1 } else { hi = mid } }
            if lo >= pr.count { break }
            q[ri] = pr[lo]
        }
        return q
    }
}
