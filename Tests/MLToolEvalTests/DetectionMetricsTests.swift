import Foundation
import MLToolCore
import MLToolTestSupport
import Testing
@testable import MLToolEval

/// Detection mAP against pycocotools (the oracle, Tests/Fixtures/eval/coco_reference.py) on the raccoon test set's
/// real ground truth (44 boxes on 40 photos) with seeded detections: jittered hits, duplicates, misses, false
/// positives of another class, tied scores, and one photo with more than 100 detections.
@Suite struct DetectionMetricsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let raccoonCSV = (SharedDatasets.raccoon ?? "<raccoon set not found: set RACCOON_DIR>") + "/data/test_labels.csv"

    /// The raccoon test boxes per photo (file order), from the author's CSV.
    static func raccoonTruth() throws -> [[ObjectAnnotation]] {
        let text = try String(contentsOfFile: raccoonCSV, encoding: .utf8)
        var order: [String] = [], boxes: [String: [ObjectAnnotation]] = [:]
        for line in text.split(whereSeparator: \.isNewline).dropFirst() {
            let f = line.split(separator: ",").map(String.init)
            guard f.count == 8, let v = Optional(f[4...7].compactMap { Double($0) }), v.count == 4 else { continue }
            if boxes[f[0]] == nil { order.append(f[0]) }
            boxes[f[0], default: []].append(ObjectAnnotation(label: f[3], box: BoundingBox(x1: v[0], y1: v[1], x2: v[2], y2: v[3])))
        }
        return order.map { boxes[$0]! }
    }

    static func detections(for truth: [[ObjectAnnotation]], seed: UInt64) -> [[Detection]] {
        var rng = SplitMix64(seed: seed)
        func u() -> Double { Double(rng.nextUnit()) }
        return truth.enumerated().map { i, boxes in
            var out: [Detection] = []
            for t in boxes {
                if u() < 0.12 { continue }   // a miss
                let b = t.box
                let jitter = 0.25 * u()
                let box = BoundingBox(x: b.x + (u() - 0.5) * jitter * b.width, y: b.y + (u() - 0.5) * jitter * b.height,
                                      width: b.width * (1 + (u() - 0.5) * jitter), height: b.height * (1 + (u() - 0.5) * jitter))
                let score = ((0.3 + 0.7 * u()) * 100).rounded() / 100   // two decimals: ties happen
                out.append(Detection(label: t.label, classIndex: 0, confidence: score, box: box))
                if u() < 0.2 {
                    out.append(Detection(label: t.label, classIndex: 0, confidence: score * 0.8,
                                         box: BoundingBox(x: box.x + 5, y: box.y - 3, width: box.width * 0.9, height: box.height)))
                }
            }
            for _ in 0..<Int(u() * 3) {
                let fp = BoundingBox(x: u() * 300, y: u() * 200, width: 20 + u() * 200, height: 20 + u() * 150)
                out.append(Detection(label: u() < 0.3 ? "other" : "raccoon", classIndex: 0, confidence: (u() * 90).rounded() / 100, box: fp))
            }
            if i == 3 {   // more than maxDets: COCO keeps the 100 best
                for k in 0..<120 {
                    out.append(Detection(label: "raccoon", classIndex: 0, confidence: 0.05 + Double(k % 7) * 0.01,
                                         box: BoundingBox(x: Double(k), y: Double(k % 13), width: 50, height: 40)))
                }
            }
            return out
        }
    }

    static func oracle(_ truth: [[ObjectAnnotation]], _ dets: [[Detection]], labels: [String]) throws -> [String: Any]? {
        let request: [String: Any] = [
            "labels": labels,
            "truth": truth.map { $0.map { ["label": $0.label, "box": [$0.box.x, $0.box.y, $0.box.width, $0.box.height]] } },
            "detections": dets.map { $0.map { ["label": $0.label, "score": $0.confidence, "box": [$0.box.x, $0.box.y, $0.box.width, $0.box.height]] } },
        ]
        return try CocoOracle.evaluate(request)
    }

    @Test(arguments: [UInt64(1), 2, 3])
    func equalsPycocotoolsOnRaccoonTruth(_ seed: UInt64) throws {
        guard FileManager.default.fileExists(atPath: Self.raccoonCSV) else {
            Oracles.missing("\(Self.raccoonCSV) is missing"); return
        }
        let truth = try Self.raccoonTruth()
        #expect(truth.count == 40 && truth.flatMap { $0 }.count == 44)
        let dets = Self.detections(for: truth, seed: seed)
        let labels = ["raccoon", "other"]
        let ours = DetectionMetrics.evaluate(truth: truth, detections: dets, labels: labels)
        guard let ref = try Self.oracle(truth, dets, labels: labels) else { return }
        let m50 = try #require(ref["mAP50"] as? Double), m = try #require(ref["mAP50to95"] as? Double)
        print("seed \(seed): mAP50 \(ours.mAP50) (pycocotools \(m50)), mAP50:95 \(ours.mAP50to95) (pycocotools \(m))")
        #expect(abs(ours.mAP50 - m50) <= 1e-4)
        #expect(abs(ours.mAP50to95 - m) <= 1e-4)
        let per = try #require(ref["perClass"] as? [String: [String: Double]])
        for c in ours.perClass {
            let r = try #require(per[c.label])
            #expect(abs((c.ap50 ?? -1) - (r["ap50"] ?? .nan)) <= 1e-4, "\(c.label) AP50")
            #expect(abs((c.ap50to95 ?? -1) - (r["ap50to95"] ?? .nan)) <= 1e-4, "\(c.label) AP")
        }
        #expect(ours.mAP50 > 0.3 && ours.mAP50 < 1 && ours.mAP50to95 < ours.mAP50)
    }

    @Test func perfectDetectionsScoreOneAndMissesLowerRecall() {
        let truth = [[ObjectAnnotation(label: "a", box: BoundingBox(x: 0, y: 0, width: 10, height: 10))],
                     [ObjectAnnotation(label: "a", box: BoundingBox(x: 5, y: 5, width: 20, height: 10)),
                      ObjectAnnotation(label: "b", box: BoundingBox(x: 50, y: 50, width: 10, height: 30))]]
        let perfect = truth.map { $0.map { Detection(label: $0.label, classIndex: 0, confidence: 0.9, box: $0.box) } }
        let e = DetectionMetrics.evaluate(truth: truth, detections: perfect, labels: ["a", "b"])
        #expect(e.mAP50 == 1 && e.mAP50to95 == 1 && e.precision == 1 && e.recall == 1)
        // One 'a' missed: recall of 'a' is 1/2; its AP50 is 51/101 (precision 1 up to recall 0.5).
        let missing = [perfect[0], [perfect[1][1]]]
        let m = DetectionMetrics.evaluate(truth: truth, detections: missing, labels: ["a", "b"])
        let a = m.perClass[0]
        #expect(a.recall == 0.5 && a.precision == 1 && abs((a.ap50 ?? 0) - 51.0 / 101) < 1e-12)
        #expect(abs((m.perClass[1].ap50 ?? 0) - 1) < 1e-12)
        // A class with no ground truth has no AP and does not count in the mean.
        let extra = DetectionMetrics.evaluate(truth: truth, detections: perfect.map { $0 + [Detection(label: "c", classIndex: 2, confidence: 0.5, box: BoundingBox(x: 0, y: 0, width: 1, height: 1))] },
                                              labels: ["a", "b", "c"])
        #expect(extra.perClass[2].ap50 == nil && extra.mAP50 == 1)
    }
}
