import Foundation
import MLToolCore
import MLToolTestSupport
import Testing

/// `mltool` on Core ML files as a user runs it: info, eval, quantize and export work on a converted .mlpackage /
/// .mlmodel; the exported ONNX runs in onnxruntime (oracle) with torch's outputs; bad files exit 65.
@Suite(.enabled(if: Tool.available, "needs MLTOOL_BIN (make test sets it)"))
struct CoreMLCLITests {
    static let fixtures = OracleAvailabilityTests.root.path + "/Tests/Fixtures/coreml"

    @Test func infoShowsLabelsAndPreprocessing() throws {
        for name in ["resnet_style.mlpackage", "small_cnn.mlmodel"] {
            let r = try Tool.run(["info", Self.fixtures + "/" + name])
            #expect(r.status == 0, "\(name): \(r.stderr)")
            #expect(r.stdout.contains("labels        10: \"class_0\", \"class_1\""), "\(r.stdout)")
            #expect(r.stdout.contains("preprocessing 64×64 rgb, value = (pixel·0.007843138 + [-1.0, -1.0, -1.0]"), "\(r.stdout)")
        }
    }

    /// The torch detector → NMS pipelines (both formats): `info` names the NMS stage's labels and shows the detector;
    /// `export --to coreml` writes the imported "boxes" detector back as a pipeline whose `info` shows the same.
    /// A "boxes" output computed after its layout (YOLOv8's decoded output0: the box arithmetic follows the concat of
    /// the scales) has no classic-layer form: refused (exit 65) with the file and the field named, no file written.
    @Test func infoShowsTheDetectorPipelinesLabels() throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
        for name in ["tiny_detector.mlmodel", "tiny_detector.mlpackage"] {
            let r = try Tool.run(["info", Self.fixtures + "/" + name])
            #expect(r.status == 0, "\(name): \(r.stderr)")
            #expect(r.stdout.contains("labels        3: \"raccoon\", \"cat\", \"person\""), "\(name): \(r.stdout)")
            #expect(r.stdout.contains("task          objectDetector") && r.stdout.contains("detection     boxes (cxcywh), 3 classes")
                    && r.stdout.contains("nms           IoU 0.45, confidence 0.25, across classes"), "\(name): \(r.stdout)")
            let out = dir.file(name + ".d.mlmodel")
            let x = try Tool.run(["export", Self.fixtures + "/" + name, "--to", "coreml", "-o", out])
            #expect(x.status == 0, "\(name): \(x.stderr)")
            #expect(FileManager.default.fileExists(atPath: out), "\(name)")
            let back = try Tool.run(["info", out])
            #expect(back.status == 0, "\(name): \(back.stderr)")
            #expect(back.stdout.contains("labels        3: \"raccoon\", \"cat\", \"person\""), "\(name): \(back.stdout)")
            #expect(back.stdout.contains("detection     boxes (cxcywh), 3 classes")
                    && back.stdout.contains("nms           IoU 0.45, confidence 0.25, across classes"), "\(name): \(back.stdout)")
        }
        let yolo = OracleAvailabilityTests.root.path + "/Tests/Fixtures/detect/tiny_yolov8.onnx"
        let imported = try Tool.run(["import", yolo, "--task", "detect", "--decoder", "yolov8", "--classes", "2", "--input-size", "96",
                                     "--scale", "0.003921569", "-o", dir.file("y.bin")])
        try #require(imported.status == 0, "\(imported.stderr)")
        let refused = try Tool.run(["export", dir.file("y.bin"), "--to", "coreml", "-o", dir.file("y.mlmodel")])
        #expect(refused.status == 65, "\(refused.stderr)")
        #expect(refused.stderr.contains(dir.file("y.bin") + ": cannot export to Core ML: detection.boxes 'output0': its values come from "),
                "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.file("y.mlmodel")))
    }

    @Test func evalQuantizeAndExportWork() throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
        // Label-named folders of the fixtures' photos, written as PNG by Python (scikit-image, Pillow).
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", "-c", """
            import os, sys, numpy as np
            from PIL import Image
            px = np.fromfile(sys.argv[1], dtype=np.uint8).reshape(3, 3, 64, 64)
            for i, label in enumerate(["class_0", "class_3", "class_3"]):
                os.makedirs(os.path.join(sys.argv[2], label), exist_ok=True)
                Image.fromarray(px[i].transpose(1, 2, 0)).save(os.path.join(sys.argv[2], label, "p%d.png" % i))
            """, Self.fixtures + "/photos.u8", dir.file("data")]
        try p.run()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            Oracles.missing("CoreMLCLITests eval/quantize/export: python3 with numpy and Pillow")
            return
        }
        let model = Self.fixtures + "/resnet_style.mlpackage"
        let eval = try Tool.run(["eval", model, dir.file("data"), "--json", "--quiet"])
        #expect(eval.status == 0, "\(eval.stderr)")
        #expect(eval.stdout.contains("\"accuracy\""), "\(eval.stdout)")
        let q = try Tool.run(["quantize", model, "--bits", "8", "--data", dir.file("data"), "-o", dir.file("q.bin"), "--quiet"])
        #expect(q.status == 0, "\(q.stderr)")
        #expect(FileManager.default.fileExists(atPath: dir.file("q.bin")))
        let x = try Tool.run(["export", model, "--to", "onnx", "-o", dir.file("m.onnx")])
        #expect(x.status == 0, "\(x.stderr)")
        // onnxruntime runs the export on the photos (as the fixture's preprocessing gives them) like torch did.
        let check = Process()
        check.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        check.arguments = ["python3", "-c", """
            import sys, numpy as np, onnxruntime as ort
            x = np.fromfile(sys.argv[1] + "/photos.u8", dtype=np.uint8).reshape(3, 3, 64, 64).astype(np.float32) / 127.5 - 1
            s = ort.InferenceSession(sys.argv[2])
            y = s.run(None, {s.get_inputs()[0].name: x})[0]
            ref = np.fromfile(sys.argv[1] + "/resnet_style.out.f32", dtype="<f4").reshape(3, 10)
            sys.exit(0 if np.allclose(y, ref, rtol=1e-4, atol=1e-5) else 3)
            """, Self.fixtures, dir.file("m.onnx")]
        try check.run()
        check.waitUntilExit()
        if check.terminationStatus == 1 {
            Oracles.missing("CoreMLCLITests' onnxruntime check: onnxruntime")
        } else {
            #expect(check.terminationStatus == 0, "onnxruntime's outputs of the exported model differ from torch's")
        }
    }

    @Test func unsupportedAndDamagedFilesExit65() throws {
        let r = try Tool.run(["import", Self.fixtures + "/unsupported.mlmodel", "-o", "/nonexistent/x.bin"])
        #expect(r.status == 65)
        #expect(r.stderr.contains("4 nodes of 3 unsupported types:") && r.stderr.contains("lrn ×2 ('lrn_a', 'lrn_b')"), "\(r.stderr)")
        let dir = try TempDir()
        defer { dir.cleanup() }
        let bytes = try Data(contentsOf: URL(fileURLWithPath: Self.fixtures + "/small_cnn.mlmodel"))
        try bytes.prefix(777).write(to: URL(fileURLWithPath: dir.file("cut.mlmodel")))
        let cut = try Tool.run(["info", dir.file("cut.mlmodel")])
        #expect(cut.status == 65, "\(cut.stderr)")
        let d = try Tool.run(["info", Self.fixtures + "/detector_pipeline.mlmodel"])
        #expect(d.status == 0, "\(d.stderr)")
        #expect(d.stdout.contains("raccoon") && d.stdout.contains("cat"), "\(d.stdout)")
    }

    /// A model with a flexible length (block.mlpackage, RangeDim 2…32): `info` shows the free dimension and its
    /// bounds, the imported file keeps them, `run` computes at a length inside and refuses one outside (exit 65)
    /// naming the input, the dimension and the range.
    @Test func flexibleLengthRunsWithinItsRangeAndIsRefusedOutside() throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
        let info = try Tool.run(["info", Self.fixtures + "/block.mlpackage"])
        #expect(info.status == 0, "\(info.stderr)")
        #expect(info.stdout.contains("input         x [-1, dim1 2…32, 16]"), "\(info.stdout)")
        let image = try Tool.run(["info", Self.fixtures + "/decoder.mlpackage"])
        #expect(image.stdout.contains("height 32|48|64, width 32|48|64, 3]"), "\(image.stdout)")
        #expect(try Tool.run(["import", Self.fixtures + "/block.mlpackage", "-o", dir.file("m.bin")]).status == 0)
        #expect(try Tool.run(["info", dir.file("m.bin")]).stdout.contains("input         x [-1, dim1 2…32, 16]"))
        for n in [5, 40] {
            try Data(NPYWriter.encode(Tensor(shape: [1, n, 16], data: [Float](repeating: 0.25, count: n * 16))))
                .write(to: URL(fileURLWithPath: dir.file("x\(n).npy")))
        }
        let inside = try Tool.run(["run", dir.file("m.bin"), "--input", dir.file("x5.npy")])
        #expect(inside.status == 0, "\(inside.stderr)")
        #expect(inside.stdout.contains("[1, 5, 26]"), "\(inside.stdout)")
        let outside = try Tool.run(["run", dir.file("m.bin"), "--input", dir.file("x40.npy")])
        #expect(outside.status == 65, "\(outside.stderr)")
        #expect(outside.stderr.contains("input 'x': expected a size the source allows, found dimension 1 (dim1) of 40, allowed 2…32"),
                "\(outside.stderr)")
    }
}
