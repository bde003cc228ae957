import Foundation
import MLToolCore
import MLToolData
import MLToolExport
import MLToolFormat
import MLToolQuant
import MLToolTestSupport
import Testing

/// Exports checked by the real runtimes' tools: onnxruntime runs the ONNX file, coremltools loads the Core ML spec.
/// Each test skips loudly when its Python package (or the mltool binary) is missing.
@Suite struct ExportOracleTests {
    static func quantized(_ model: Model, _ options: QuantizeOptions) throws -> Model {
        var o = options
        o.minElements = 1
        return try Quantizer.quantize(model, o).0
    }

    @Test(arguments: ["float", "int8", "palette4", "palette6-int8lut"])
    func onnxRuntimeMatchesTheEngine(variant: String) throws {
        let dir = try TempDir(tag: "export-ort").url
        defer { try? FileManager.default.removeItem(at: dir) }
        var model = tinyClassifier(mapHead: variant == "int8")
        if variant == "int8" { model = try Self.quantized(model, QuantizeOptions(mode: .linear, bits: 8, asymmetric: true)) }
        if variant == "palette4" {
            // Float tables with channel scales: ONNX has no look-up op, so float32.
            var o = QuantizeOptions(mode: .palette, bits: 4)
            o.int8Table = false
            model = try Self.quantized(model, o)
        }
        if variant == "palette6-int8lut" {
            // Palettes with int8 tables (the default) are int8 weights: exported as int8 + DequantizeLinear, not
            // as float32.
            model = try Self.quantized(model, QuantizeOptions(mode: .palette, bits: 6))
        }
        let int8Weights = variant == "int8" || variant == "palette6-int8lut"
        let exported = try ONNXExporter.export(model, name: "tiny")
        let onnx = dir.appendingPathComponent("tiny.onnx"), input = dir.appendingPathComponent("x.npy"), output = dir.appendingPathComponent("y.npy")
        try Data(exported.bytes).write(to: onnx)
        let x = randomInputs(6, seed: 5)
        try writeNPY(nchw(x), to: input)
        guard let text = try python("run_onnx.py", [onnx.path, input.path, output.path]) else { return }
        let summary = try json(text)
        #expect(summary["input"] as? String == "image")
        #expect(summary["input_shape"] as? [String] == ["N", "3", "12", "12"])
        #expect((summary["opset"] as? Int ?? 0) >= 13)
        let metadata = summary["metadata"] as? [String: String] ?? [:]
        #expect(metadata["labels"] == #"["circle","square","stripes"]"#)
        #expect(metadata["preprocessing"]?.contains("0.007843") == true)
        #expect(metadata["provenance"]?.contains("toolVersion") == true)
        let types = summary["initializer_types"] as? [String] ?? []
        if variant == "int8" {
            #expect(types.contains("INT8") && (summary["dequantize_nodes"] as? Int) == 3, "\(summary)")
        } else if variant == "palette6-int8lut" {
            let palettes = model.tensors.filter { $0.dtype == .palette6 }.count
            #expect(palettes > 0 && types.contains("INT8") && (summary["dequantize_nodes"] as? Int) == palettes, "\(summary)")
        } else {
            #expect(!types.contains("INT8"))
        }
        if variant == "palette4" { #expect(metadata["weights"]?.contains("palette4 weights stored as float32") == true) }
        assertClose(try readNPYFloats(output), try run(model, x), atol: 1e-5, "\(variant): onnxruntime vs the engine")
        // onnxruntime's default int8 fusions are approximate, not wrong: probabilities stay close.
        let fused = summary["default_session_max_diff"] as? Double ?? 1
        #expect(fused <= (int8Weights ? 0.05 : 1e-5), "\(variant): default onnxruntime session differs by \(fused)")
    }

    @Test func coreMLToolsReadsTheSpec() throws {
        let dir = try TempDir(tag: "export-coremltools").url
        defer { try? FileManager.default.removeItem(at: dir) }
        let float = tinyClassifier()
        let f = dir.appendingPathComponent("tiny.mlmodel"), q = dir.appendingPathComponent("tiny-int8.mlmodel")
        try Data(try CoreMLExporter.export(float, name: "tiny").bytes).write(to: f)
        let int8 = try Self.quantized(float, QuantizeOptions(mode: .linear, bits: 8, asymmetric: true))
        try Data(try CoreMLExporter.export(int8, name: "tiny-int8").bytes).write(to: q)
        guard let text = try python("check_coreml.py", [q.path, f.path]) else { return }
        let s = try json(text)
        #expect(s["specification_version"] as? Int == 5)
        #expect(s["model_type"] as? String == "neuralNetworkClassifier")
        let input = s["input"] as? [String: Any] ?? [:]
        #expect(input["name"] as? String == "image" && input["type"] as? String == "imageType")
        #expect(input["width"] as? Int == 12 && input["height"] as? Int == 12 && input["color_space"] as? String == "RGB")
        let outputs = (s["outputs"] as? [[String: String]] ?? []).map { "\($0["name"] ?? ""):\($0["type"] ?? "")" }
        #expect(outputs == ["classLabel:stringType", "classLabelProbs:dictionaryType"])
        #expect(s["predicted_feature_name"] as? String == "classLabel")
        #expect(s["predicted_probabilities_name"] as? String == "classLabelProbs")
        #expect(s["class_labels"] as? [String] == ["circle", "square", "stripes"])
        let md = s["metadata"] as? [String: Any] ?? [:]
        #expect(md["author"] as? String == "mltool tests" && md["license"] as? String == "MIT")
        #expect(md["version"] as? String == "1.2" && md["short_description"] as? String == "a tiny classifier built in code")
        let scaler = s["scaler"] as? [String: Double] ?? [:]
        #expect(abs((scaler["channel_scale"] ?? 0) - 1 / 127.5) < 1e-7 && scaler["red_bias"] == -1 && scaler["blue_bias"] == -1)
        #expect(s["weight_storage"] as? [String] == ["linearQuantization8"])
        // coremltools' own dequantization of our int8 codes lands within half a step of the float weights.
        #expect(s["dequantized_layers"] as? Int == 3)
        let steps = s["dequantized_max_error_in_steps"] as? Double ?? 99
        #expect(steps <= 0.5001, "dequantized weights are \(steps) quantization steps from the float ones")
    }

    /// The CLI path a user takes: train on images with a tiny extractor, predict, export, run in onnxruntime;
    /// export to Core ML, import it back, predict again.
    @Test func trainedModelExportsMatchPredict() throws {
        guard Oracles.mltoolBinary != nil else { return skip(Oracles.mltoolBinaryProblem) }
        let dir = try TempDir(tag: "export-e2e").url
        defer { try? FileManager.default.removeItem(at: dir) }
        // Images: three classes with different colour patterns plus noise.
        var rng = SplitMix64(seed: 99)
        var files = [String]()
        for (c, label) in ["circle", "square", "stripes"].enumerated() {
            let folder = dir.appendingPathComponent("data/\(label)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            for i in 0..<12 {
                var px = [UInt8](repeating: 0, count: 12 * 12 * 3)
                for y in 0..<12 { for x in 0..<12 { for ch in 0..<3 {
                    let base: Int
                    switch c {
                    case 0: base = (x - 6) * (x - 6) + (y - 6) * (y - 6) < 16 ? 220 : 30
                    case 1: base = (3..<9).contains(x) && (3..<9).contains(y) ? (ch == 1 ? 200 : 60) : 40
                    default: base = x % 4 < 2 ? (ch == 2 ? 230 : 20) : 120
                    }
                    px[(y * 12 + x) * 3 + ch] = UInt8(max(0, min(255, base + Int(rng.next() % 41) - 20)))
                } } }
                let path = folder.appendingPathComponent("\(i).png").path
                #expect(writePNG(px, width: 12, height: 12, to: path))
                files.append(path)
            }
        }
        let extractor = dir.appendingPathComponent("extractor.bin").path
        try ModelFile.write(tinyClassifier(), to: extractor)
        let model = dir.appendingPathComponent("model.bin").path
        guard let trained = try mltool(["train", dir.appendingPathComponent("data").path, "--extractor", extractor, "-o", model, "--quiet"]) else { return }
        #expect(trained.status == 0, "train: \(trained.stderr)")
        try checkAgainstPredict(model: model, images: files, dir: dir, quantized: false)
    }

    /// The real Fashion-MNIST model of `make demo` (float and its int8 version beside it): 50 test images.
    @Test func fashionMNISTModelExportsMatchPredict() throws {
        let demo = ProcessInfo.processInfo.environment["MLTOOL_FASHION_MODEL"] ?? Paths.root.appendingPathComponent(".build/demo/model.bin").path
        let test = Paths.root.appendingPathComponent("datasets/fashion-mnist-small/test")
        guard FileManager.default.fileExists(atPath: demo), FileManager.default.fileExists(atPath: test.path) else {
            skip("no Fashion-MNIST model at \(demo) (make demo, or set MLTOOL_FASHION_MODEL) or no \(test.path)")
            return
        }
        guard Oracles.mltoolBinary != nil else { return skip(Oracles.mltoolBinaryProblem) }
        var images = [String]()
        let labels = try FileManager.default.contentsOfDirectory(atPath: test.path).filter { !$0.hasPrefix(".") }.sorted()
        for l in labels {
            let files = try FileManager.default.contentsOfDirectory(atPath: test.appendingPathComponent(l).path).sorted().prefix(5)
            images += files.map { test.appendingPathComponent(l).appendingPathComponent($0).path }
        }
        #expect(images.count == 50)
        let dir = try TempDir(tag: "export-fashion").url
        defer { try? FileManager.default.removeItem(at: dir) }
        try checkAgainstPredict(model: demo, images: images, dir: dir, quantized: false)
        let quantized = (demo as NSString).deletingPathExtension + ".int8.bin"
        guard FileManager.default.fileExists(atPath: quantized) else {
            return skip("no int8 model at \(quantized) (make demo-model writes it with `mltool quantize --bits 8`)")
        }
        try checkAgainstPredict(model: quantized, images: images, dir: dir, quantized: true)
    }

    /// predict --json vs onnxruntime on the same preprocessed tensors, and vs the Core ML export imported back;
    /// coremltools reads the Core ML export's labels, input and weight storage. A quantized model's exports must stay
    /// within 10% of its native size.
    func checkAgainstPredict(model: String, images: [String], dir: URL, quantized: Bool) throws {
        let tag = (model as NSString).lastPathComponent
        guard let predicted = try mltool(["predict", model] + images + ["--json", "--top", "100"]) else { return }
        #expect(predicted.status == 0, "predict: \(predicted.stderr)")
        let expected = try parsePredictions(predicted.stdout)
        let source = try ModelFile.read(path: model)
        let labels = source.metadata.labels
        let preprocessor = try ImagePreprocessor(try #require(source.metadata.image))
        let p = preprocessor.config
        var inputs = [Float]()
        for f in images { inputs += try preprocessor.process(try ImageDecoder.decode(path: f)) }
        let x = Tensor(shape: [images.count, p.height, p.width, preprocessor.channels], data: inputs)

        // ONNX in onnxruntime.
        let onnx = dir.appendingPathComponent(tag + ".onnx").path
        guard let exported = try mltool(["export", model, "--to", "onnx", "-o", onnx]) else { return }
        #expect(exported.status == 0, "export: \(exported.stderr)")
        let npy = dir.appendingPathComponent("x.npy"), out = dir.appendingPathComponent("y.npy")
        try writeNPY(nchw(x), to: npy)
        if let text = try python("run_onnx.py", [onnx, npy.path, out.path]) {
            // onnxruntime's default int8 fusions are approximate (see onnxRuntimeMatchesTheEngine); float graphs
            // are only reordered.
            let fused = try json(text)["default_session_max_diff"] as? Double ?? .nan
            #expect(fused <= (quantized ? 0.05 : 1e-5), "\(tag): default onnxruntime session differs by \(fused)")
            var predicted = [Double]()
            for f in images {
                let row = try #require(expected[f], "no prediction for \(f)")
                predicted += labels.map { row[$0] ?? .nan }
            }
            assertClose(try readNPYFloats(out), predicted, atol: 1e-4, "\(tag): onnxruntime vs predict --json")
        }

        // Core ML, read back by `mltool import`.
        let mlmodel = dir.appendingPathComponent(tag + ".mlmodel").path
        let back = dir.appendingPathComponent(tag + ".coreml.bin").path
        guard let c = try mltool(["export", model, "--to", "coreml", "-o", mlmodel]) else { return }
        #expect(c.status == 0, "export coreml: \(c.stderr)")
        guard let i = try mltool(["import", mlmodel, "-o", back]) else { return }
        #expect(i.status == 0, "import: \(i.stderr)")
        guard let again = try mltool(["predict", back] + images + ["--json", "--top", "100"]) else { return }
        #expect(again.status == 0, "predict (Core ML import): \(again.stderr)")
        let roundTrip = try parsePredictions(again.stdout)
        var a = [Double](), b = [Double]()
        for f in images {
            let x = try #require(expected[f]), y = try #require(roundTrip[f], "no prediction for \(f) after the Core ML round trip")
            a += labels.map { x[$0] ?? .nan }
            b += labels.map { y[$0] ?? .nan }
        }
        assertClose(b, a, atol: 1e-4, "\(tag): Core ML import vs predict --json")

        if quantized {
            let native = try FileManager.default.attributesOfItem(atPath: model)[.size] as? Int ?? 0
            for file in [onnx, mlmodel] {
                let size = try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int ?? 0
                #expect(abs(Double(size) / Double(native) - 1) <= 0.10, "\(file): \(size) bytes vs native \(native)")
            }
        }
        // coremltools reads what a Core ML user sees: the classifier, its labels, the image input, the weights' storage.
        guard let summary = try python("check_coreml.py", [mlmodel]) else { return }
        let s = try json(summary)
        #expect(s["model_type"] as? String == "neuralNetworkClassifier", "\(tag): \(s["model_type"] ?? "none")")
        #expect(s["class_labels"] as? [String] == labels, "\(tag): Core ML class labels \(s["class_labels"] ?? "none")")
        let input = s["input"] as? [String: Any] ?? [:]
        #expect(input["type"] as? String == "imageType" && input["width"] as? Int == p.width && input["height"] as? Int == p.height,
                "\(tag): Core ML input \(input)")
        let storage = s["weight_storage"] as? [String] ?? []
        #expect(quantized ? storage.contains("linearQuantization8") : storage == ["float32"], "\(tag): weights stored as \(storage)")
    }
}
