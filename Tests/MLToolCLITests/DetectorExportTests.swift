import Foundation
import MLTool
import MLToolTestSupport
import Testing

/// Detectors exported to ONNX with their decoder and NMS in the graph: onnxruntime on the exported file gives the
/// boxes `Detector` gives on real photos (same count, labels, corners within 1e-3 of the input size, scores within
/// 1e-4), for a detector trained by `ObjectDetectorTrainer` and for the torch fixtures through every decoder.
@Suite(.serialized) struct DetectorExportTests {
    static let tests = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    static let fixtures = tests.appendingPathComponent("Fixtures/detect").path

    /// The first `count` raccoon photos (sorted by name), or nil after a loud skip.
    static func raccoonPhotos(_ count: Int) throws -> [String]? {
        guard let root = SharedDatasets.raccoon else {
            Oracles.missing("the raccoon set (../shared/datasets/raccoon or RACCOON_DIR)")
            return nil
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: root + "/images").filter { $0.hasSuffix(".jpg") }
            .sorted { $0.compare($1, options: .numeric) == .orderedAscending }
        return names.prefix(count).map { root + "/images/" + $0 }
    }

    struct Comparison { var objects = 0; var maxCorner = 0.0; var maxScore = 0.0; var metadata: [String: Any] = [:] }

    /// Exports `model`, runs onnxruntime on each photo's preprocessed input and compares with `Detector`.
    static func compare(_ model: Model, photos: [String], tag: String) throws -> Comparison? {
        let dir = try TempDir(); defer { dir.cleanup() }
        let onnx = dir.file("det.onnx")
        try Data(try ModelExport.export(model, name: tag, format: .onnx).bytes).write(to: URL(fileURLWithPath: onnx))
        let detector = try Detector(model: model, options: DetectorOptions(threads: 1))
        let p = detector.preprocessor
        let (h, w, c) = (p.config.height, p.config.width, p.channels)
        var expected: [[DetectionCandidate]] = [], inputs: [String] = []
        for (i, photo) in photos.enumerated() {
            let image = try ImageDecoder.decode(path: photo)
            let outputs = try detector.run([image])
            expected.append(NonMaxSuppression.select(try detector.decoder.decode(outputs, item: 0, minScore: detector.settings.confidenceThreshold),
                                                     settings: detector.settings))
            var nhwc = [Float](repeating: 0, count: p.elementCount)
            try nhwc.withUnsafeMutableBufferPointer { try p.processBatch([image], into: $0) }
            var nchw = [Float](repeating: 0, count: nhwc.count)
            for y in 0..<h { for x in 0..<w { for k in 0..<c { nchw[(k * h + y) * w + x] = nhwc[(y * w + x) * c + k] } } }
            inputs.append(dir.file("x\(i).npy"))
            try NPY.write(nchw, shape: [1, c, h, w], to: inputs[i])
        }
        guard let summary = try Python.run(tests.appendingPathComponent("Fixtures/export/run_detector_onnx.py").path, [onnx] + inputs) else {
            return nil
        }
        #expect(summary["input_shape"] as? [String] == ["1", "\(c)", "\(h)", "\(w)"], "\(tag)")
        let outs = (summary["outputs"] as? [[String: Any]] ?? []).map { "\($0["name"] ?? ""):\($0["type"] ?? "")" }
        #expect(outs == ["detected_boxes:tensor(float)", "detected_scores:tensor(float)", "detected_labels:tensor(int64)"], "\(tag)")
        #expect((summary["ops"] as? [String] ?? []).contains("NonMaxSuppression"))
        let results = summary["results"] as? [[String: Any]] ?? []
        try #require(results.count == photos.count)
        var cmp = Comparison(metadata: summary["metadata"] as? [String: Any] ?? [:])
        let tolerance = 1e-3 * Double(max(h, w))
        for (i, want) in expected.enumerated() {
            let boxes = results[i]["boxes"] as? [[Double]] ?? [], scores = results[i]["scores"] as? [Double] ?? []
            let labels = results[i]["labels"] as? [Int] ?? []
            #expect(boxes.count == want.count && scores.count == want.count && labels.count == want.count,
                    "\(tag) \(photos[i]): onnxruntime found \(boxes.count) objects, Detector \(want.count)")
            guard boxes.count == want.count else { continue }
            cmp.objects += want.count
            for (j, d) in want.enumerated() {
                let corners = [Double(d.x1), Double(d.y1), Double(d.x2), Double(d.y2)]
                let diff = zip(corners, boxes[j]).map { abs($0 - $1) }.max() ?? .infinity
                cmp.maxCorner = max(cmp.maxCorner, boxes[j].count == 4 ? diff : .infinity)
                cmp.maxScore = max(cmp.maxScore, abs(Double(d.score) - scores[j]))
                #expect(labels[j] == d.classIndex, "\(tag) \(photos[i]) object \(j)")
            }
        }
        #expect(cmp.maxCorner <= tolerance, "\(tag): corners differ by \(cmp.maxCorner) px")
        #expect(cmp.maxScore <= 1e-4, "\(tag): scores differ by \(cmp.maxScore)")
        print("\(tag): \(cmp.objects) objects on \(photos.count) photos, max corner difference \(cmp.maxCorner) px, max score difference \(cmp.maxScore)")
        return cmp
    }

    @Test func trainedDetectorExportsToONNX() throws {
        guard let photos = try Self.raccoonPhotos(16), let root = SharedDatasets.raccoon else { return }
        let dir = try TempDir(); defer { dir.cleanup() }
        try FileManager.default.createDirectory(atPath: dir.file("images"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: dir.file("annotations"), withIntermediateDirectories: true)
        for photo in photos.prefix(12) {
            let name = (photo as NSString).lastPathComponent
            try FileManager.default.createSymbolicLink(atPath: dir.file("images/" + name), withDestinationPath: photo)
            let xml = (name as NSString).deletingPathExtension + ".xml"
            try FileManager.default.copyItem(atPath: root + "/annotations/" + xml, toPath: dir.file("annotations/" + xml))
        }
        var parameters = ObjectDetectorParameters()
        parameters.epochs = 2
        parameters.augmentedCopies = 0
        parameters.threads = 2
        // An untrained-looking detector scores low: a low threshold still yields boxes to compare.
        parameters.nms = NMSSettings(iouThreshold: 0.45, confidenceThreshold: 0.01, perClass: true, maxDetections: 20)
        let model = try ObjectDetectorTrainer(data: dir.path, parameters: parameters).train().model
        #expect(model.metadata.detection?.decoder == "anchorFree" && model.metadata.detection?.boxEncoding == "ltrb")
        guard let cmp = try Self.compare(model, photos: photos, tag: "trained") else { return }
        #expect(cmp.objects > 0, "the trained detector found nothing to compare")
        #expect(cmp.metadata["labels"] as? String == #"["raccoon"]"#)
        #expect((cmp.metadata["detection"] as? String)?.contains(#""decoder":"anchorFree""#) == true)
        #expect((cmp.metadata["preprocessing"] as? String)?.contains("letterbox to 320×320") == true)
    }

    /// The torch fixtures through every decoder: anchor-free DFL heads and YOLOv8's decoded output (tiny_yolov8),
    /// anchor-grid heads and YOLOv5-style boxes with objectness (tiny_yolov3); class-wise and class-agnostic NMS.
    @Test(arguments: [("tiny_yolov8", true), ("tiny_yolov8", false), ("tiny_yolov3", true), ("tiny_yolov3", false)])
    func torchFixtureExportsToONNX(_ name: String, raw: Bool) throws {
        guard let raccoons = try Self.raccoonPhotos(6) else { return }
        let photos = (0..<4).map { Self.fixtures + "/test\($0).png" }.filter { FileManager.default.fileExists(atPath: $0) } + raccoons
        let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: Self.fixtures + "/manifest.json"))) as? [String: Any] ?? [:]
        let size = manifest["inputSize"] as? Int ?? 0, classes = manifest["classes"] as? [String] ?? []
        let anchors = manifest["anchors"] as? [String: [[Double]]] ?? [:]
        // YOLOv3's box formula on the same raw heads: other boxes, but the export must still agree with Detector.
        let encodings = name == "tiny_yolov3" && raw ? ["yolov5", "yolov3"] : [""]
        for perClass in [true, false] {
          for encoding in encodings {
            let nms = NMSSettings(iouThreshold: 0.45, confidenceThreshold: 0.1, perClass: perClass, maxDetections: 30)
            var detection: DetectionConfig
            switch (name, raw) {
            case ("tiny_yolov3", true):
                let a = { (s: String) in anchors[s]?.map { $0.map(Float.init) } }
                detection = .anchorGrid(classes: classes.count, heads: [DetectionHead(tensor: "raw8", stride: 8, anchors: a("8")),
                                                                        DetectionHead(tensor: "raw16", stride: 16, anchors: a("16"))], nms: nms)
            case ("tiny_yolov3", false): detection = .boxes(classes: classes.count, tensor: "boxes", layout: "nbk", objectness: true, nms: nms)
            case (_, true):
                detection = .anchorFree(classes: classes.count, heads: [DetectionHead(tensor: "raw8", stride: 8), DetectionHead(tensor: "raw16", stride: 16)],
                                        regMax: manifest["regMax"] as? Int ?? 16, nms: nms)
            default: detection = .boxes(classes: classes.count, tensor: "output0", layout: "nkb", nms: nms)
            }
            if !encoding.isEmpty { detection.boxEncoding = encoding }
            let model = try ModelImport.importModel(path: Self.fixtures + "/\(name).onnx", options: ImportOptions(
                image: .yolo(size: size), labels: classes, inputSize: (size, size), detection: detection))
            let tag = "\(name) \(detection.decoder)/\(detection.boxEncoding) \(perClass ? "per class" : "class-agnostic")"
            guard let cmp = try Self.compare(model, photos: photos, tag: tag) else { return }
            #expect(cmp.objects >= 2, "\(tag): too few objects to compare")
          }
        }
    }
}

/// A float32 .npy file (version 1.0, C order).
enum NPY {
    static func write(_ values: [Float], shape: [Int], to path: String) throws {
        var header = "{'descr': '<f4', 'fortran_order': False, 'shape': (\(shape.map(String.init).joined(separator: ", "))\(shape.count == 1 ? "," : "")), }"
        while (10 + header.utf8.count + 1) % 64 != 0 { header += " " }
        header += "\n"
        let len = UInt16(header.utf8.count)
        var bytes: [UInt8] = [0x93] + Array("NUMPY".utf8) + [1, 0, UInt8(len & 0xff), UInt8(len >> 8)] + Array(header.utf8)
        bytes += values.withUnsafeBytes { Array($0) }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }
}

/// A Python oracle run: the JSON object its last stdout line holds; nil after a loud skip when python3 or its
/// packages are missing (the script exits 3).
enum Python {
    static func run(_ script: String, _ args: [String]) throws -> [String: Any]? {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", script] + args
        let out = Pipe(), err = Pipe()
        p.standardOutput = out; p.standardError = err
        try p.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile(), stderr = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        let why = String(decoding: stderr, as: UTF8.self)
        if p.terminationStatus == 3 || p.terminationStatus == 127 {
            Oracles.missing("\((script as NSString).lastPathComponent): \(why.trimmingCharacters(in: .whitespacesAndNewlines))")
            return nil
        }
        guard p.terminationStatus == 0 else {
            Issue.record("\((script as NSString).lastPathComponent) failed (\(p.terminationStatus)): \(why.suffix(3000))")
            return nil
        }
        let last = String(decoding: stdout, as: UTF8.self).split(separator: "\n").last.map(String.init) ?? ""
        return try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any]
    }
}
