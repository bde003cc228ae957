import Foundation
import Testing
import MLToolFormat
import MLToolTestSupport

/// The acceptance numbers on real data: the Fashion-MNIST small model `make test` trains into .build/demo
/// (2000 training PNGs, 1000 test PNGs, EfficientNet-Lite0 features).
enum FashionDemo {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent(".build/demo").path
    static let present: Bool = {
        let ok = FileManager.default.fileExists(atPath: directory + "/model.bin")
        if !ok { print("FashionAcceptanceTests: SKIPPED: no \(directory)/model.bin (make test trains it)") }
        return ok
    }()
}

@Suite(.serialized, .enabled(if: Tool.available && FashionDemo.present,
                             "needs MLTOOL_BIN and .build/demo/model.bin (make test trains it)"))
struct FashionAcceptanceTests {
    static let demo = FashionDemo.directory

    /// The accuracy `mltool eval --json` reports; throws (failing the test) when eval fails or reports none.
    static func accuracy(_ model: String) throws -> Double {
        let r = try Tool.run(["eval", model, "--json", "--quiet"])
        try #require(r.status == 0, "eval \(model): \(r.stderr)")
        let obj = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
        let reports = obj?["reports"] as? [[String: Any]]
        let accuracy = try #require(reports?.first?["accuracy"] as? Double, "eval \(model) --json reports no accuracy: \(r.stdout)")
        try #require(accuracy.isFinite && accuracy > 0.5, "eval \(model): accuracy \(accuracy)")
        return accuracy
    }

    static func size(_ path: String) -> Double {
        Double((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0)
    }

    @Test func floatModelReachesTheReference() throws {
        let model = try ModelFile.read(path: Self.demo + "/model.bin")
        let holdout = try #require(model.metadata.metrics["holdout.accuracy"])
        #expect(holdout >= 0.87, "holdout accuracy \(holdout); reference (onnxruntime features + sklearn LR) 0.869")
        #expect(model.metadata.split?.holdout.count == 1000)
        // `mltool eval` with the recorded holdout gives the same number.
        #expect(abs(try Self.accuracy(Self.demo + "/model.bin") - holdout) < 1e-9)
    }

    /// The int8 model is calibrated on training images (32 of datasets/fashion-mnist-small/train), never on the 1,000
    /// test images its accuracy is then measured on.
    @Test func int8AndFP16KeepTheAccuracy() throws {
        let float = try Self.accuracy(Self.demo + "/model.bin")
        let train = SharedDatasets.repository.appendingPathComponent("datasets/fashion-mnist-small/train").path
        let int8Path = Self.demo + "/model.int8-train-calibrated.bin"
        let q8 = try Tool.run(["quantize", Self.demo + "/model.bin", "--bits", "8", "--no-eval", "--calibration", train, "-o", int8Path])
        #expect(q8.status == 0, "\(q8.stderr)")
        #expect(q8.stdout.contains("calibration on 32 ") && q8.stdout.contains(train), "\(q8.stdout)")
        let int8 = try Self.accuracy(int8Path)
        #expect(float - int8 <= 0.003 + 1e-9, "int8 drop \((float - int8) * 100) points")
        let ratio8 = Self.size(int8Path) / Self.size(Self.demo + "/model.bin")
        print("FashionAcceptanceTests: int8 file is \(String(format: "%.1f", ratio8 * 100))% of float, accuracy \(int8) vs \(float)")
        #expect(ratio8 <= 0.28)

        let fp16 = Self.demo + "/model.fp16.bin"
        let q = try Tool.run(["quantize", Self.demo + "/model.bin", "--bits", "16", "--no-eval", "--quiet", "-o", fp16])
        #expect(q.status == 0, "\(q.stderr)")
        let acc16 = try Self.accuracy(fp16)
        #expect(float - acc16 <= 0.001 + 1e-9, "fp16 drop \((float - acc16) * 100) points")
        #expect(Self.size(fp16) / Self.size(Self.demo + "/model.bin") <= 0.52)
    }

    /// A palette that costs much accuracy is still written (as asked) but warned of, with what would keep more: 4-bit
    /// palettes without calibration, gated on 10 test images per class.
    @Test func aLargeDropIsWarnedOf() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        let test = SharedDatasets.repository.appendingPathComponent("datasets/fashion-mnist-small/test").path
        for label in try FileManager.default.contentsOfDirectory(atPath: test) {
            try FileManager.default.createDirectory(atPath: dir.file("test/" + label), withIntermediateDirectories: true)
            for f in try FileManager.default.contentsOfDirectory(atPath: test + "/" + label).sorted().prefix(10) {
                try FileManager.default.copyItem(atPath: test + "/" + label + "/" + f, toPath: dir.file("test/\(label)/\(f)"))
            }
        }
        let r = try Tool.run(["quantize", Self.demo + "/model.bin", "--bits", "4", "--no-bias-correction", "--data", dir.file("test"),
                              "-o", dir.file("p4.bin")])
        let warning = r.stderr.split(separator: "\n").first { $0.hasPrefix("mltool: warning: the compressed model lost ") }
        #expect(r.status == 0 && FileManager.default.fileExists(atPath: dir.file("p4.bin")), "\(r.stderr)")
        #expect(warning?.hasSuffix("on 100 items); to keep more: calibration (without --no-bias-correction), "
                                   + "--max-drop P (backs off the most sensitive tensors) or more --bits") == true, "\(r.stderr)")
        // The gate of --max-drop replaces the warning.
        let gated = try Tool.run(["quantize", Self.demo + "/model.bin", "--bits", "8", "--data", dir.file("test"), "--max-drop", "1",
                                  "-o", dir.file("q8.bin")])
        #expect(gated.status == 0 && !gated.stderr.contains("warning"), "\(gated.stderr)")
        print("FashionAcceptanceTests: \(warning ?? "no warning")")
    }
}
