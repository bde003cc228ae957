import Foundation
import MLToolCore
import MLToolData
import MLToolDetect
import MLToolEngine
import MLToolTestSupport
import Testing
@testable import MLToolImport

/// Paths and helpers of the detection tests.
enum DetectFixtures {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let directory = root.appendingPathComponent("Tests/Fixtures/detect").path
    static func path(_ name: String) -> String { directory + "/" + name }

    struct TensorFile: Decodable { let name: String; let shape: [Int]; let file: String }
    struct ModelEntry: Decodable { let model: String; let input: TensorFile; let outputs: [TensorFile] }
    struct Photo: Decodable { let file: String }
    struct Manifest: Decodable {
        let inputSize: Int; let classes: [String]; let photos: [Photo]; let models: [ModelEntry]
        let anchors: [String: [[Float]]]; let strides: [Int]; let regMax: Int
    }

    static func manifest() throws -> Manifest {
        try JSONDecoder().decode(Manifest.self, from: Data(contentsOf: URL(fileURLWithPath: path("manifest.json"))))
    }

    static func load(_ t: TensorFile) throws -> Tensor {
        let data = try Data(contentsOf: URL(fileURLWithPath: path(t.file)))
        let floats = data.withUnsafeBytes { raw in
            (0..<(raw.count / 4)).map { Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self))) }
        }
        return Tensor(shape: t.shape, data: floats)
    }

    /// NCHW → NHWC for rank 4.
    static func toNHWC(_ t: Tensor) -> Tensor {
        guard t.rank == 4 else { return t }
        let (n, c, h, w) = (t.shape[0], t.shape[1], t.shape[2], t.shape[3])
        var out = [Float](repeating: 0, count: t.count)
        for b in 0..<n { for y in 0..<h { for x in 0..<w { for ch in 0..<c {
            out[((b * h + y) * w + x) * c + ch] = t.data[((b * c + ch) * h + y) * w + x]
        } } } }
        return Tensor(shape: [n, h, w, c], data: out)
    }

    /// The decoder settings of the fixtures, by model and decoder kind.
    static func config(_ model: String, raw: Bool, manifest m: Manifest, nms: NMSSettings = NMSSettings()) -> DetectionConfig {
        let c = m.classes.count
        if model == "tiny_yolov3" {
            if raw {
                return .anchorGrid(classes: c, heads: [DetectionHead(tensor: "raw8", stride: 8, anchors: m.anchors["8"]),
                                                       DetectionHead(tensor: "raw16", stride: 16, anchors: m.anchors["16"])], nms: nms)
            }
            return .boxes(classes: c, tensor: "boxes", layout: "nbk", objectness: true, nms: nms)
        }
        if raw {
            return .anchorFree(classes: c, heads: [DetectionHead(tensor: "raw8", stride: 8), DetectionHead(tensor: "raw16", stride: 16)],
                               regMax: m.regMax, nms: nms)
        }
        return .boxes(classes: c, tensor: "output0", layout: "nkb", nms: nms)
    }

    static func importDetector(_ model: String, raw: Bool, nms: NMSSettings = NMSSettings()) throws -> Model {
        let m = try manifest()
        let size = m.inputSize
        return try ONNXImporter.importModel(path: path(model + ".onnx"), options: ImportOptions(
            image: .yolo(size: size), labels: m.classes, inputSize: (size, size), detection: config(model, raw: raw, manifest: m, nms: nms)))
    }

    static func photo(_ file: String) throws -> RGBImage { try ImageDecoder.decode(path: file) }
}

/// An oracle run: `reference_detect.py` under python3 with onnxruntime; nil (and a loud skip, or a failure under
/// MLTOOL_REQUIRE_ORACLES=1) when python3 or onnxruntime is missing.
enum DetectOracle {
    struct Object: Decodable { let `class`: Int; let score: Double; let box: [Double] }
    struct Result: Decodable { let photos: [[Object]] }

    static func skip(_ why: String, sourceLocation: SourceLocation = #_sourceLocation) {
        Oracles.missing(why, sourceLocation: sourceLocation)
    }

    static func run(_ request: [String: Any]) throws -> Result? {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", DetectFixtures.path("reference_detect.py")]
        let input = Pipe(), output = Pipe(), errors = Pipe()
        p.standardInput = input; p.standardOutput = output; p.standardError = errors
        do { try p.run() } catch { skip("python3 not runnable: \(error)"); return nil }
        input.fileHandleForWriting.write(try JSONSerialization.data(withJSONObject: request))
        try input.fileHandleForWriting.close()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = errors.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            let text = String(decoding: err, as: UTF8.self)
            if text.contains("No module named") { skip("the detection oracle needs numpy, pillow and onnxruntime: \(text.split(separator: "\n").last ?? "")"); return nil }
            Issue.record("reference_detect.py failed: \(text)")
            return nil
        }
        return try JSONDecoder().decode(Result.self, from: out)
    }

    /// The request for a model imported with `config` (IR tensors renamed to the ONNX ones they came from).
    static func request(model: String, input: String, config: DetectionConfig, image: ImagePreprocessing, photos: [String]) throws -> [String: Any] {
        let encoder = JSONEncoder()
        let decoder = try JSONSerialization.jsonObject(with: encoder.encode(config))
        let nms = try JSONSerialization.jsonObject(with: encoder.encode(config.nms))
        return ["model": model, "input": input, "size": [image.height, image.width], "resize": image.resize,
                "padValue": image.padValue ?? 0, "scale": image.scale, "decoder": decoder, "nms": nms, "photos": photos]
    }

    /// Same count; in order, the same class, IoU ≥ 0.99 and confidences within 1e-3. Returns the worst IoU and
    /// confidence difference (for the log).
    @discardableResult
    static func compare(_ got: [DetectedObject], _ want: [Object], _ what: String) -> (Double, Double) {
        #expect(got.count == want.count, "\(what): \(got.count) objects, the oracle \(want.count)")
        var worstIoU = 1.0, confidences = (got: [Double](), oracle: [Double]())
        for (g, w) in zip(got, want) {
            let wb = BoundingBox(x1: w.box[0], y1: w.box[1], x2: w.box[2], y2: w.box[3])
            // A box clipped to a line at the photo's edge has no area, so IoU says nothing: its corners must agree.
            let corners = max(abs(g.box.x - wb.x), abs(g.box.y - wb.y), abs(g.box.maxX - wb.maxX), abs(g.box.maxY - wb.maxY))
            let degenerate = (g.box.width == 0 || g.box.height == 0) && (wb.width == 0 || wb.height == 0)
            let iou = degenerate && corners <= 0.01 ? 1 : g.box.iou(wb)
            worstIoU = min(worstIoU, iou.isNaN ? 0 : iou)
            confidences.got.append(g.confidence)
            confidences.oracle.append(w.score)
            #expect(g.classIndex == w.class, "\(what): class \(g.classIndex), the oracle \(w.class)")
            #expect(iou >= 0.99, "\(what): IoU \(iou) between \(g.box) and \(wb)")
        }
        assertClose(confidences.got, confidences.oracle, atol: 1e-3, "\(what): confidences against the oracle's")
        return (worstIoU, Closeness.ratio(confidences.got, confidences.oracle, atol: 1))
    }
}
