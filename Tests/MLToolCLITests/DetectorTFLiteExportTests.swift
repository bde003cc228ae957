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
        var grid = Shared.dflDetector()
        grid.metadata.detection?.decoder = "anchorGrid"
        grid.metadata.detection?.boxEncoding = "yolov5"
        #expect(throws: ExportError.unsupported(model: "g", format: "TensorFlow Lite", place: "detection.decoder",
                                                reason: "decoder 'anchorGrid' is not yet written as TFLite operators (anchorFree is); "
                                                    + "export to ONNX instead")) {
            try ModelExport.export(grid, name: "g", format: .tflite)
        }
    }
}
