import Foundation
import MLTool
import MLToolTestSupport
import Testing

/// Detectors exported to TensorFlow Lite with their decoder and NMS as builtin operators: LiteRT on the exported file
/// gives the boxes `Detector` gives on real raccoon photos (same count and labels, corners within 1e-4 of the input
/// size, scores within 1e-4), and the file imports back (read up to its heads) to a detector that finds the same.
@Suite(.serialized) struct DetectorTFLiteExportTests {
    typealias Shared = DetectorExportTests

    struct Comparison {
        var objects = 0, reimported = 0
        var summary: [String: Any] = [:]
    }

    /// Exports `model` to TFLite, runs LiteRT on each photo's preprocessed input (NHWC) and compares with `Detector`;
    /// then imports the file back and compares the two detectors.
    static func compare(_ model: Model, photos: [String], tag: String) throws -> Comparison? {
        let dir = try TempDir(); defer { dir.cleanup() }
        let path = dir.file("det.tflite")
        try Data(try ModelExport.export(model, name: tag, format: .tflite).bytes).write(to: URL(fileURLWithPath: path))
        let e = try Shared.expected(model, photos: photos, in: dir, nhwc: true)
        let (h, w, c) = e.size
        let script = Shared.tests.appendingPathComponent("Fixtures/tflite/run_detector_tflite.py").path
        guard let summary = try Python.run(script, [path] + e.inputs) else { return nil }
        #expect(summary["input_shape"] as? [Int] == [1, h, w, c], "\(tag)")
        let outs = (summary["outputs"] as? [[String: Any]] ?? []).map {
            "\($0["name"] as? String ?? ""):\($0["type"] as? String ?? ""):\($0["signature"] as? [Int] ?? [])"
        }
        #expect(outs == ["detected_boxes:float32:[-1, 4]", "detected_scores:float32:[-1]", "detected_labels:int32:[-1]"], "\(tag): \(outs)")
        #expect((summary["ops"] as? [String] ?? []).contains("NON_MAX_SUPPRESSION_V4"), "\(tag)")
        let results = summary["results"] as? [[String: Any]] ?? []
        try #require(results.count == photos.count)
        #expect(results.allSatisfy { $0["label_dtype"] as? String == "int32" })
        let tolerance = 1e-4 * Double(max(h, w))
        let found = Shared.check(results, e, photos: photos, tolerance: tolerance, runtime: "LiteRT", tag: tag)
        var cmp = Comparison(objects: found.objects, summary: summary)

        // `mltool import det.tflite`: the detection settings, labels and preprocessing the export recorded in its
        // "mltool" metadata make it a detector again, its graph read up to the heads.
        let back = try ModelImport.importModel(path: path)
        #expect(back.metadata.task == .objectDetector && back.metadata.detection == model.metadata.detection, "\(tag)")
        #expect(back.metadata.labels == model.metadata.labels && back.metadata.image == model.metadata.image, "\(tag)")
        let again = try Shared.reimportedAgree(back, e, tolerance: tolerance, tag: tag)
        cmp.reimported = again.objects
        print("\(tag): LiteRT: \(cmp.objects) objects on \(photos.count) photos, max corner difference \(found.corner) px, "
            + "max score difference \(found.score); re-imported: \(cmp.reimported) objects, max corner difference \(again.corner) px")
        return cmp
    }

    /// The detector `mltool train` makes (anchor-free "ltrb" heads, one class, per-class NMS, 20 boxes at most, a
    /// threshold of 0.01 so its early boxes are many) on 16 raccoon photos.
    @Test func trainedDetectorExportsToTFLite() throws {
        guard let model = try Shared.trainedModel(), let photos = try Shared.raccoonPhotos(16) else { return }
        guard let cmp = try Self.compare(model, photos: photos, tag: "trained") else { return }
        #expect(cmp.objects > 0, "the trained detector found nothing to compare")
        let md = cmp.summary["mltool"] as? [String: Any] ?? [:]
        #expect(md["labels"] as? String == #"["raccoon"]"# && md["task"] as? String == "objectDetector")
        #expect((md["detection_outputs"] as? String)?.contains("detected_labels (K, int32)") == true)
        // One class: one NMS, no per-class merge.
        #expect((cmp.summary["ops"] as? [String] ?? []).filter { $0 == "NON_MAX_SUPPRESSION_V4" }.count == 1)
    }

    /// DFL heads (4 bins a side, two classes, strides 8 and 16): per-class NMS (one NMS per class, then TOPK_V2),
    /// class-agnostic, and per-class with at most one box per class.
    @Test(arguments: [(true, nil), (false, nil), (true, 1 as Int?)])
    func dflDetectorExportsToTFLite(perClass: Bool, maxPerClass: Int?) throws {
        guard let photos = try Shared.raccoonPhotos(8) else { return }
        var model = Shared.dflDetector()
        model.metadata.detection?.nms.perClass = perClass
        model.metadata.detection?.nms.maxPerClass = maxPerClass
        let tag = "dfl \(perClass ? "per class" : "class-agnostic")" + (maxPerClass.map { ", \($0) per class" } ?? "")
        guard let cmp = try Self.compare(model, photos: photos, tag: tag) else { return }
        #expect(cmp.objects >= 4, "\(tag): too few objects to compare")
        let ops = cmp.summary["ops"] as? [String] ?? []
        // TOPK_V2 sorts the candidates; per class a second one merges the classes' picks.
        #expect(ops.filter { $0 == "NON_MAX_SUPPRESSION_V4" }.count == (perClass ? 2 : 1), "\(tag)")
        #expect(ops.filter { $0 == "TOPK_V2" }.count == (perClass ? 2 : 1), "\(tag)")
        #expect(ops.contains("SOFTMAX") && ops.contains("SUM"), "\(tag): the DFL expectation")
    }

    /// The torch YOLOv3-tiny-style fixture (Tests/Fixtures/detect/make_detect_fixtures.py: seeded, trained on drawn
    /// squares and disks) imported by `mltool import --task detect --decoder anchor-grid:…` on its raw heads (3 anchors
    /// at strides 8 and 16, two classes, 96×96 letterbox), with YOLOv5's and YOLOv3's box formulas, each with per-class
    /// NMS, class-agnostic NMS and per-class with at most one box per class, on the fixture's 4 photos and 6 raccoons.
    /// Measured (LiteRT 2.3.0, Intel Xeon): yolov5 50, 50 and 12 objects, worst corner difference 1.5e-5 px, score
    /// 8.3e-7; yolov3 52, 52 and 12 objects, 7.6e-6 px, 8.3e-7; the re-imported files 0 px from the original.
    @Test(arguments: ["yolov5", "yolov3"])
    func anchorGridDetectorExportsToTFLite(encoding: String) throws {
        guard let raccoons = try Shared.raccoonPhotos(6) else { return }
        guard Tool.available else { Oracles.missing("the mltool binary (MLTOOL_BIN)"); return }
        let dir = try TempDir(); defer { dir.cleanup() }
        try "square\ndisk\n".write(toFile: dir.file("labels.txt"), atomically: true, encoding: .utf8)
        let heads = "raw8@8=12x12/20x20/28x28,raw16@16=28x28/38x38/48x48"
        let r = try Tool.run(["import", Shared.fixtures + "/tiny_yolov3.onnx", "--task", "detect", "--decoder", "anchor-grid:\(encoding == "yolov3" ? "yolov3:" : "")\(heads)",
                              "--labels", dir.file("labels.txt"), "--input-size", "96", "--resize", "letterbox", "--scale", "0.003921569",
                              "--min-confidence", "0.1", "--max-objects", "30", "-o", dir.file("grid.bin")])
        try #require(r.status == 0, "\(r.stderr)")
        let imported = try ModelFile.read(path: dir.file("grid.bin"))
        #expect(imported.metadata.detection?.decoder == "anchorGrid" && imported.metadata.detection?.boxEncoding == encoding)
        // `mltool export grid.bin --to tflite` writes what the library writes.
        let x = try Tool.run(["export", dir.file("grid.bin"), "--to", "tflite", "-o", dir.file("grid.tflite")])
        #expect(x.status == 0, "\(x.stderr)")
        let library = try ModelExport.export(imported, name: dir.file("grid.bin"), format: .tflite).bytes
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir.file("grid.tflite"))) == Data(library), "the CLI's file differs from the library's")
        let photos = (0..<4).map { Shared.fixtures + "/test\($0).png" } + raccoons
        for (perClass, maxPerClass) in [(true, nil), (false, nil), (true, 1 as Int?)] {
            var model = imported
            model.metadata.detection?.nms.perClass = perClass
            model.metadata.detection?.nms.maxPerClass = maxPerClass
            let tag = "anchorGrid \(encoding) \(perClass ? "per class" : "class-agnostic")" + (maxPerClass.map { ", \($0) per class" } ?? "")
            guard let cmp = try Self.compare(model, photos: photos, tag: tag) else { return }
            // Measured: 50 (yolov5) and 52 (yolov3) objects, 12 with one per class.
            #expect(cmp.objects >= (maxPerClass == nil ? 45 : 11), "\(tag): \(cmp.objects) objects compared")
            let ops = cmp.summary["ops"] as? [String] ?? []
            #expect(ops.filter { $0 == "NON_MAX_SUPPRESSION_V4" }.count == (perClass ? 2 : 1), "\(tag)")
            // (anchor, y, x) order: one TRANSPOSE per head; YOLOv3's sizes through EXP.
            #expect(ops.filter { $0 == "TRANSPOSE" }.count >= 2 && ops.contains("EXP") == (encoding == "yolov3"), "\(tag): \(ops)")
        }
    }

    /// "boxes" decoders: the torch detector coremltools converted to both Core ML formats (normalized cx, cy, w, h
    /// and a separate confidence output, class-agnostic NMS), mltool's DFL detector exported to Core ML and imported
    /// back (the same layout, per-class NMS), and the detectors `DetectorExportTests.boxesDetector` builds: pixel x1,
    /// y1, x2, y2 with objectness and sigmoid scores in an "nkb" output (and the same values read as cx, cy, w, h with
    /// no activation), normalized y1, x1, y2, x2 with "nbc" scores, per-class, and those scores transposed ("ncb"); and
    /// the first behind an identity node ("nkb-identity").
    /// Measured (LiteRT 2.3.0, Intel Xeon, 8 raccoon photos): worst corner difference 7.6e-6 px everywhere (1.2e-7 of
    /// the 64-pixel inputs), worst score difference 8.3e-7 (the torch pipelines), 6.0e-8 (DFL), 1.2e-7 (nkb, nbk,
    /// ncb), 1.9e-6 (nkb-cxcywh: raw objectness × raw logit, no sigmoid); the re-imported files 0 px apart.
    @Test(arguments: [("tiny_detector.mlmodel", 107), ("tiny_detector.mlpackage", 107), ("dfl-coreml", 80), ("nkb", 59),
                      ("nkb-cxcywh", 21), ("nbk", 61), ("ncb", 61), ("nkb-identity", 59)])
    func boxesDetectorExportsToTFLite(name: String, measuredObjects: Int) throws {
        guard let photos = try Shared.raccoonPhotos(8) else { return }
        let model = try Self.boxesModel(name)
        #expect(model.metadata.detection?.decoder == "boxes", "\(name)")
        guard let cmp = try Self.compare(model, photos: photos, tag: "boxes \(name)") else { return }
        #expect(cmp.objects >= measuredObjects * 9 / 10, "\(name): \(cmp.objects) objects compared, \(measuredObjects) measured")
        let ops = cmp.summary["ops"] as? [String] ?? []
        let encoding = model.metadata.detection?.boxEncoding ?? ""
        #expect(ops.contains("REDUCE_MAX") && ops.contains("ARG_MAX"), "\(name): \(ops)")
        if encoding != "cxcywh" { #expect(ops.contains("MINIMUM") && ops.contains("MAXIMUM"), "\(name): \(ops)") }
    }

    /// The "boxes" detectors of `boxesDetectorExportsToTFLite`.
    static func boxesModel(_ name: String) throws -> Model {
        switch name {
        case "tiny_detector.mlmodel", "tiny_detector.mlpackage":
            return try ModelImport.importModel(path: Shared.tests.appendingPathComponent("Fixtures/coreml/" + name).path)
        case "dfl-coreml":
            let dir = try TempDir(); defer { dir.cleanup() }
            try Data(try ModelExport.export(Shared.dflDetector(), name: "dfl", format: .coreml).bytes).write(to: URL(fileURLWithPath: dir.file("d.mlmodel")))
            return try ModelImport.importModel(path: dir.file("d.mlmodel"))
        case "nkb-cxcywh":
            var model = Shared.boxesDetector("nkb")
            model.metadata.detection?.boxEncoding = "cxcywh"
            model.metadata.detection?.boxes?.scoreActivation = "none"
            return model
        case "nkb-identity":
            // The boxes output an identity's: the TFLite lowering writes no operator for it, so the export gives it a
            // RESHAPE of its own for the importer to find it by name.
            var model = Shared.boxesDetector("nkb")
            model.metadata.graph?.nodes.append(Node(name: "out.id", op: .identity, inputs: ["output0"], outputs: ["out"], attributes: Attributes()))
            model.metadata.graph?.outputs = ["out"]
            model.metadata.detection?.boxes?.tensor = "out"
            return model
        case "ncb":
            // The class scores (1, 80, 2) transposed to (1, 2, 80).
            var model = Shared.boxesDetector("nbk")
            model.metadata.graph?.nodes.append(Node(name: "scores.t", op: .transpose, inputs: ["scores"], outputs: ["scores.t"],
                                                    attributes: Attributes(perm: [0, 2, 1])))
            model.metadata.graph?.outputs = ["boxes", "scores.t"]
            model.metadata.detection?.boxes?.scoresTensor = "scores.t"
            model.metadata.detection?.boxes?.scoresLayout = "ncb"
            return model
        default:
            return Shared.boxesDetector(name)
        }
    }

    /// What the TFLite ops cannot express the same way is refused by name; a text classifier with the reason its
    /// features cannot be computed in TFLite, nor through the Task Library's NLClassifier token ids.
    @Test func refusals() throws {
        var text = ModelMetadata(task: .textClassifier, graph: nil, labels: ["a", "b"])
        text.text = TextConfig(wordNgrams: [1, 2])
        let e = #expect(throws: ExportError.self) { try ModelExport.export(Model(metadata: text, tensors: []), name: "t", format: .tflite) }
        guard case let .unsupported(_, _, place, reason)? = e else { Issue.record("\(String(describing: e))"); return }
        #expect(place == "text classifier" && reason.contains("NFKC and lower-casing") && reason.contains("word 1–2-grams")
                && reason.contains("NLClassifier") && reason.contains("forms no n-grams"), "\(reason)")
        var model = Shared.dflDetector()
        model.metadata.detection?.nms.perClass = false
        model.metadata.detection?.nms.maxPerClass = 2
        #expect(throws: ExportError.unsupported(model: "m", format: "TensorFlow Lite", place: "detection.nms.maxPerClass",
                                                reason: "a per-class limit with class-agnostic suppression is not yet supported")) {
            try ModelExport.export(model, name: "m", format: .tflite)
        }
        // A box encoding the decoders do not define, an unknown decoder, and a network op TFLite lacks (the torch
        // fixture's decoded "boxes" output is computed with Slice and Expand, which the lowering refuses).
        var odd = Shared.boxesDetector("nkb")
        odd.metadata.detection?.boxEncoding = "ltrb"
        #expect(throws: ExportError.unsupported(model: "b", format: "TensorFlow Lite", place: "detection.boxEncoding",
                                                reason: "box encoding 'ltrb' is not yet supported")) {
            try ModelExport.export(odd, name: "b", format: .tflite)
        }
        odd.metadata.detection?.decoder = "ssd"
        #expect(throws: ExportError.unsupported(model: "b", format: "TensorFlow Lite", place: "detection.decoder",
                                                reason: "decoder 'ssd' is not yet supported")) {
            try ModelExport.export(odd, name: "b", format: .tflite)
        }
        let yolo = try ModelImport.importModel(path: Shared.fixtures + "/tiny_yolov3.onnx", options: ImportOptions(
            image: .yolo(size: 96), labels: ["square", "disk"], inputSize: (96, 96),
            detection: .boxes(classes: 2, tensor: "boxes", layout: "nbk", objectness: true)))
        let e2 = #expect(throws: ExportError.self) { try ModelExport.export(yolo, name: "y", format: .tflite) }
        guard case let .unsupported(_, _, yoloPlace, yoloReason)? = e2 else { Issue.record("\(String(describing: e2))"); return }
        #expect(yoloPlace.hasPrefix("node '") && yoloReason.contains("not yet supported"), "\(yoloPlace): \(yoloReason)")
    }
}
