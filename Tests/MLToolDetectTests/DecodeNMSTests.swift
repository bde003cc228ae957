import Foundation
import MLToolCore
import MLToolData
import Testing
@testable import MLToolDetect

/// The decoders and NMS on inputs whose answers are worked out by hand from docs/FORMAT.md section 4.3.
@Suite struct DecodeNMSTests {
    func candidate(_ x1: Float, _ y1: Float, _ x2: Float, _ y2: Float, _ c: Int, _ s: Float, _ i: Int) -> DetectionCandidate {
        DetectionCandidate(x1: x1, y1: y1, x2: x2, y2: y2, classIndex: c, score: s, index: i)
    }

    @Test func greedySuppressionKeepsTheBestOfOverlappingBoxes() {
        let cs = [candidate(1, 1, 11, 11, 0, 0.8, 0), candidate(0, 0, 10, 10, 0, 0.9, 1), candidate(20, 20, 30, 30, 0, 0.7, 2)]
        // IoU of the first two: 81 / 119 = 0.68 > 0.45.
        let kept = NonMaxSuppression.select(cs, settings: NMSSettings(iouThreshold: 0.45, confidenceThreshold: 0.25))
        #expect(kept.map(\.index) == [1, 2])
        let loose = NonMaxSuppression.select(cs, settings: NMSSettings(iouThreshold: 0.7, confidenceThreshold: 0.25))
        #expect(loose.map(\.index) == [1, 0, 2])
    }

    @Test func perClassAndAgnostic() {
        let cs = [candidate(0, 0, 10, 10, 0, 0.9, 0), candidate(1, 1, 11, 11, 1, 0.8, 1)]
        #expect(NonMaxSuppression.select(cs, settings: NMSSettings(perClass: true)).map(\.index) == [0, 1])
        #expect(NonMaxSuppression.select(cs, settings: NMSSettings(perClass: false)).map(\.index) == [0])
    }

    @Test func thresholdsAreStrict() {
        // IoU exactly 0.5 (intersection 2, union 4) is not above a 0.5 threshold; a score equal to the confidence
        // threshold is not above it.
        let cs = [candidate(0, 0, 3, 1, 0, 0.9, 0), candidate(1, 0, 4, 1, 0, 0.8, 1), candidate(10, 10, 12, 12, 0, 0.25, 2)]
        let kept = NonMaxSuppression.select(cs, settings: NMSSettings(iouThreshold: 0.5, confidenceThreshold: 0.25))
        #expect(kept.map(\.index) == [0, 1])
    }

    @Test func tiesGoToTheLowerIndexAndLimitsApply() {
        let cs = (0..<6).map { candidate(Float($0) * 20, 0, Float($0) * 20 + 10, 10, $0 % 2, 0.5, 5 - $0) }
        let all = NonMaxSuppression.select(cs, settings: NMSSettings())
        #expect(all.map(\.index) == [0, 1, 2, 3, 4, 5])
        #expect(NonMaxSuppression.select(cs, settings: NMSSettings(maxDetections: 4)).map(\.index) == [0, 1, 2, 3])
        let perClass = NonMaxSuppression.select(cs, settings: NMSSettings(maxPerClass: 1))
        #expect(perClass.map(\.index) == [0, 1])
    }

    @Test func onnxFormSelectsPerClassInOnnxOrder() throws {
        // Two boxes overlapping (IoU 0.68), one apart; class 1 prefers the second box.
        let boxes = Tensor(shape: [1, 3, 4], data: [0, 0, 10, 10, 1, 1, 11, 11, 20, 20, 30, 30])
        let scores = Tensor(shape: [1, 2, 3], data: [0.9, 0.8, 0.1, 0.2, 0.95, 0.05])
        let rows = try NonMaxSuppression.onnxSelectedIndices(boxes: boxes, scores: scores, centerPointBox: false, maxPerClass: 5,
                                                             iouThreshold: 0.5, scoreThreshold: 0.06)
        #expect(rows == [[0, 0, 0], [0, 0, 2], [0, 1, 1]])
    }

    @Test func anchorGridYOLOv5OnZeroLogits() throws {
        // One 2×2 head, one anchor (30 × 20), 2 classes: every logit 0 except class 1 of cell (1, 0) and its box.
        var data = [Float](repeating: 0, count: 2 * 2 * 7)
        let cell = (0 * 2 + 1) * 7
        data[cell + 6] = 4     // class 1 logit
        data[cell + 2] = 10    // tw: σ → 1, (2σ)² → 4
        let config = DetectionConfig.anchorGrid(classes: 2, heads: [DetectionHead(tensor: "h", stride: 16, anchors: [[30, 20]])])
        let d = DetectionDecoder(config: config, inputWidth: 32, inputHeight: 32)
        let out = try d.decode(["h": Tensor(shape: [1, 2, 2, 7], data: data)], item: 0, minScore: 0.3)
        // Cell (x 1, y 0): centre ((2·0.5 − 0.5 + 1)·16, (0.5)·16) = (24, 8); size (≈4·30, 20); score 0.5·σ(4).
        #expect(out.count == 1)
        let c = try #require(out.first)
        let sig4: Float = 1 / (1 + exp(-4))
        #expect(c.classIndex == 1 && abs(c.score - 0.5 * sig4) < 1e-6)
        #expect(abs((c.x1 + c.x2) / 2 - 24) < 1e-4 && abs((c.y1 + c.y2) / 2 - 8) < 1e-4)
        // Width (2σ(10))²·30 ≈ 119.989, height (2σ(0))²·20 = 20.
        let w = pow(2 / (1 + exp(-10)), 2) * Float(30)
        #expect(abs((c.x2 - c.x1) - w) < 1e-3 && abs((c.y2 - c.y1) - 20) < 1e-4, "box \(c.x2 - c.x1) × \(c.y2 - c.y1)")
        #expect(c.index == 1)
    }

    @Test func anchorFreeDFLOnUniformBins() throws {
        // Uniform bins: each distance is the mean bin, (16 − 1) / 2 = 7.5 cells.
        var data = [Float](repeating: 0, count: 1 * 1 * (64 + 3))
        data[64 + 2] = 2
        let config = DetectionConfig.anchorFree(classes: 3, heads: [DetectionHead(tensor: "h", stride: 8)], regMax: 16)
        let d = DetectionDecoder(config: config, inputWidth: 8, inputHeight: 8)
        let out = try d.decode(["h": Tensor(shape: [1, 1, 1, 67], data: data)], item: 0, minScore: 0.5)
        let c = try #require(out.first)
        #expect(c.classIndex == 2)
        #expect(abs(c.x1 - (0.5 - 7.5) * 8) < 1e-4 && abs(c.x2 - (0.5 + 7.5) * 8) < 1e-4)
        #expect(abs(c.y1 - c.x1) < 1e-4 && abs(c.y2 - c.x2) < 1e-4)
    }

    @Test func boxesLayoutsAgree() throws {
        // The same two boxes as (N, B, K) with objectness and as (N, K, B) without, centre form.
        let nbk = Tensor(shape: [1, 2, 7], data: [10, 10, 4, 6, 0.5, 0.2, 0.9, 30, 30, 8, 8, 1.0, 0.7, 0.1])
        var nkbData = [Float](repeating: 0, count: 12)
        let values: [[Float]] = [[10, 10, 4, 6, 0.1, 0.45], [30, 30, 8, 8, 0.7, 0.1]]
        for b in 0..<2 { for k in 0..<6 { nkbData[k * 2 + b] = values[b][k] } }
        let a = DetectionDecoder(config: .boxes(classes: 2, tensor: "t", layout: "nbk", objectness: true), inputWidth: 64, inputHeight: 64)
        let b = DetectionDecoder(config: .boxes(classes: 2, tensor: "t", layout: "nkb"), inputWidth: 64, inputHeight: 64)
        let ca = try a.decode(["t": nbk], item: 0, minScore: 0.3)
        let cb = try b.decode(["t": Tensor(shape: [1, 6, 2], data: nkbData)], item: 0, minScore: 0.3)
        #expect(ca.map(\.classIndex) == [1, 0] && cb.map(\.classIndex) == [1, 0])
        #expect(zip(ca, cb).allSatisfy { abs($0.score - $1.score) < 1e-6 && $0.x1 == $1.x1 && $0.y2 == $1.y2 })
        #expect(ca.first.map { ($0.x1, $0.y1, $0.x2, $0.y2) } ?? (0, 0, 0, 0) == (8, 7, 12, 13))
    }

    @Test func letterboxGeometryMapsBackToThePhoto() throws {
        // A 200 × 100 photo into 96 × 96: r = 0.48, 96 × 48 centred with 24 rows of padding above.
        let p = try ImagePreprocessor(.yolo(size: 96))
        let g = p.geometry(width: 200, height: 100)
        #expect(g.scaleX == 0.48 && g.offsetX == 0 && g.offsetY == 24)
        let photo = BoundingBox(x: 50, y: 20, width: 100, height: 50)
        let back = g.toPhoto(g.toInput(photo))
        #expect(abs(back.x - 50) < 1e-9 && abs(back.maxY - 70) < 1e-9)
        // The padding is the grey 114 / 255, the picture starts on row 24.
        let image = RGBImage(width: 200, height: 100, pixels: [UInt8](repeating: 255, count: 200 * 100 * 3))
        let x = try p.process(image)
        let grey = Float(114) / 255
        for (i, want) in [(0, grey), ((23 * 96) * 3, grey), ((24 * 96) * 3, 1), ((71 * 96 + 95) * 3, 1), ((72 * 96) * 3, grey)] {
            #expect(abs(x[i] - want) < 1e-6, "pixel value \(i): \(x[i]), expected \(want)")
        }
    }

    @Test func visionBoxIsNormalisedWithOriginBottomLeft() {
        let b = BoundingBox(x: 10, y: 20, width: 30, height: 40).normalized(imageWidth: 100, imageHeight: 200)
        #expect(b == BoundingBox(x: 0.1, y: 0.7, width: 0.3, height: 0.2))
    }
}
