import Foundation
import MLToolCore
import MLToolData
import MLToolEngine
import MLToolFormat
import MLToolImport
import MLToolQuant
import MLToolTestSupport
import Testing
@testable import MLToolExport

/// The TensorFlow Lite export, run by LiteRT's interpreter (Tests/Fixtures/tflite/run_tflite.py) against the engine
/// on the same preprocessed tensors; skips loudly (Oracles.missing) when ai_edge_litert is absent.
@Suite struct TFLiteExportTests {
    /// Every tensor's shape at the model's input size (what `ModelExport.tensorShapes` gives the exporter).
    static func shapes(_ model: Model) throws -> [String: [Int]] {
        var md = model.metadata
        var graph = try #require(md.graph)
        if let image = md.image {
            for i in graph.inputs.indices where graph.inputs[i].shape.count == 4 {
                graph.inputs[i].shape[1] = image.height
                graph.inputs[i].shape[2] = image.width
            }
        }
        var seen = Set(graph.inputs.map(\.name))
        graph.outputs = graph.nodes.flatMap(\.outputs).filter { seen.insert($0).inserted }
        md.graph = graph
        var shapes = try Engine.outputShapes(model: Model(metadata: md, tensors: model.tensors), batch: 1)
        for input in graph.inputs { shapes[input.name] = input.shape.map { $0 == -1 ? 1 : $0 } }
        return shapes
    }

    static func export(_ model: Model, name: String) throws -> ExportResult {
        try TFLiteExporter.export(model, name: name, shapes: try shapes(model))
    }

    /// Writes `model` as .tflite, runs LiteRT on `x` (NHWC); its output and the summary, nil when skipped.
    static func liteRT(_ model: Model, _ x: Tensor, tag: String) throws -> (output: [Float], summary: [String: Any], notes: [String])? {
        let dir = try TempDir(tag: "export-tflite-\(tag)").url
        defer { try? FileManager.default.removeItem(at: dir) }
        let exported = try export(model, name: tag)
        let file = dir.appendingPathComponent("\(tag).tflite"), input = dir.appendingPathComponent("x.npy")
        let output = dir.appendingPathComponent("y.npy")
        try Data(exported.bytes).write(to: file)
        try writeNPY(x, to: input)
        guard let text = try python("../tflite/run_tflite.py", [file.path, input.path, output.path]) else { return nil }
        return (try readNPYFloats(output), try json(text), exported.notes)
    }

    /// The tiny classifier of the ONNX tests (conv stride 2 with TF-SAME pads and relu6, depthwise conv with
    /// hard-swish, a per-channel add, max pool, batch norm, global average pool, reshape, dense, softmax), float and
    /// with int8 (asymmetric), palettized (an int8 table, the default, a float table, or a symmetric 1-bit float
    /// table, ±a per channel) or f16 weights; "pads" gives the first conv pads TFLite's SAME does not make (a PAD
    /// before it).
    @Test(arguments: ["float", "int8", "palette4", "palette4-float", "palette1-symmetric", "fp16", "pads", "mapHead"])
    func liteRTMatchesTheEngine(variant: String) throws {
        var model = tinyClassifier(mapHead: variant == "mapHead")
        if variant == "int8" { model = try ExportOracleTests.quantized(model, QuantizeOptions(mode: .linear, bits: 8, asymmetric: true)) }
        if variant == "palette4" { model = try ExportOracleTests.quantized(model, QuantizeOptions(mode: .palette, bits: 4)) }
        if variant == "palette4-float" {
            var o = QuantizeOptions(mode: .palette, bits: 4)
            o.int8Table = false
            model = try ExportOracleTests.quantized(model, o)
        }
        if variant == "palette1-symmetric" {
            model.tensors = try model.tensors.map { ["conv1.w", "dw.w", "fc.w"].contains($0.name) ? try Self.symmetricPalette1($0) : $0 }
        }
        if variant == "fp16" { model = try ExportOracleTests.quantized(model, QuantizeOptions(mode: .fp16, bits: 16)) }
        if variant == "pads", var graph = model.metadata.graph {
            graph.nodes[0].attributes.pads = [1, 1, 1, 1]
            model.metadata.graph = graph
        }
        let x = randomInputs(6, seed: 5)
        guard let (y, summary, notes) = try Self.liteRT(model, x, tag: variant) else { return }
        #expect(summary["identifier"] as? String == "TFL3")
        #expect(summary["version"] as? Int == 3)
        #expect(summary["input"] as? String == "input")
        #expect(summary["input_shape"] as? [Int] == [1, 12, 12, 3])
        #expect(summary["input_signature"] as? [Int] == [-1, 12, 12, 3])
        #expect(summary["output"] as? String == "probabilities" && summary["output_shape"] as? [Int] == [6, 3])
        // Weights stay as stored behind a DEQUANTIZE: int8 (int8 and int8-table palettes) or float16 (f16 and
        // float-table palettes); int32 holds the MEAN axes and the reshape target.
        let int8 = ["int8", "palette4", "palette1-symmetric"].contains(variant), half = ["fp16", "palette4-float"].contains(variant)
        let types = variant == "mapHead" ? ["FLOAT32"] : int8 ? ["FLOAT32", "INT32", "INT8"] : half ? ["FLOAT16", "FLOAT32", "INT32"]
            : ["FLOAT32", "INT32"]
        #expect(summary["tensor_types"] as? [String] == types)
        let ops = summary["ops"] as? [String] ?? []
        let head = variant == "mapHead" ? ["FULLY_CONNECTED", "SOFTMAX"] : ["MEAN", "RESHAPE", "FULLY_CONNECTED", "SOFTMAX"]
        let stem = variant == "pads" ? ["PAD", "CONV_2D"] : ["CONV_2D"]
        if int8 || half {
            #expect(ops == ["DEQUANTIZE", "CONV_2D", "DEQUANTIZE", "DEPTHWISE_CONV_2D", "HARD_SWISH", "ADD", "MAX_POOL_2D", "MUL", "ADD",
                            "MEAN", "RESHAPE", "DEQUANTIZE", "FULLY_CONNECTED", "SOFTMAX"], "\(ops)")
        } else {
            #expect(ops == stem + ["DEPTHWISE_CONV_2D", "HARD_SWISH", "ADD", "MAX_POOL_2D", "MUL", "ADD"] + head, "\(ops)")
        }
        let mltool = summary["mltool"] as? [String: String] ?? [:]
        #expect(mltool["labels"] == #"["circle","square","stripes"]"#)
        #expect(mltool["preprocessing"]?.contains("layout NHWC float32") == true)
        #expect(summary["description"] as? String == "a tiny classifier built in code")
        #expect(summary["metadata_names"] as? [String] == ["TFLITE_METADATA", "mltool"])
        #expect(summary["zip"] as? [String: String] == ["labels.txt": "circle\nsquare\nstripes\n"])
        let weights = notes.filter { $0 != TFLiteLowering.floatActivations }
        let kept = ["int8": "int8 weights kept as int8", "palette4": "palette4 weights (an int8 table) kept as the int8 values",
                    "palette4-float": "palette4 weights (a float table) kept as float16 behind a DEQUANTIZE, largest weight error",
                    "palette1-symmetric": "palette1 weights (a float table) kept as int8 (per-channel scales on axis",
                    "fp16": "f16 weights kept as float16 behind a DEQUANTIZE"][variant]
        if let kept {
            #expect(weights.count == 3 && weights.allSatisfy { $0.contains(kept) && $0.contains("behind a DEQUANTIZE") }, "\(notes)")
            #expect(notes.contains(TFLiteLowering.floatActivations) == int8, "\(notes)")
            #expect(mltool["weights"]?.contains(kept) == true)
        } else {
            #expect(notes.isEmpty)
        }
        if int8 {
            // The conv kernel (OHWI) and the dense weights (out, in) per channel on axis 0, the depthwise kernel
            // (1, KH, KW, C) on axis 3; one scale and one zero point per channel (asymmetric int8 keeps its zero points).
            let q = summary["quantized"] as? [String: [Any]] ?? [:]
            let axes = q.values.map { ($0[0] as? Int ?? -1, $0[1] as? Int ?? -1, $0[2] as? Int ?? -1, $0[3] as? [Int] ?? []) }
            #expect(q.count == 3, "\(q)")
            for (axis, scales, zeros, shape) in axes {
                #expect(shape.count == 4 || shape.count == 2, "\(q)")
                #expect(axis == (shape.count == 4 && shape[0] == 1 ? 3 : 0) && scales == shape[axis] && zeros == scales, "\(q)")
            }
        }
        // Measured worst: 1.2e-7 (mapHead), 6e-8 for the others, on probabilities of range 0.3–0.9: the DEQUANTIZE
        // computes scale · (q − zero point) in float32 as the engine does. A float-table palette's weights are
        // rounded to float16: the engine on those rounded weights is the reference, and the palette model is
        // 6.6e-5 away.
        if variant == "palette4-float" {
            var rounded = model
            rounded.tensors = try model.tensors.map { t in
                guard t.dtype.traits.isPalette else { return t }
                return StoredTensor(name: t.name, tensor: Tensor(shape: t.shape, data: try t.floats().map { Float(Float16($0)) }))
            }
            assertClose(y, try run(rounded, x), atol: 3e-7, "\(variant): LiteRT vs the engine on float16-rounded weights")
            assertClose(y, try run(model, x), atol: 1e-4, "\(variant): LiteRT vs the engine")
        } else {
            assertClose(y, try run(model, x), atol: 3e-7, "\(variant): LiteRT vs the engine")
        }
    }

    /// `t` as a 1-bit palette along its last axis whose table is ±a_c for channel c (a_c the channel's mean |w|):
    /// a float table that int8 holds exactly (±127 with scale a_c / 127).
    static func symmetricPalette1(_ t: StoredTensor) throws -> StoredTensor {
        let w = try t.floats(), n = try #require(t.shape.last)
        var a = [Float](repeating: 0, count: n)
        for (i, v) in w.enumerated() { a[i % n] += abs(v) / Float(w.count / n) }
        let lut = a.flatMap { [-$0, $0] }
        return StoredTensor(name: t.name, dtype: .palette1, shape: t.shape,
                            quant: QuantParams(axis: t.shape.count - 1, groupSize: 1, lut: lut), bytes: TensorBytes(copying: PackedBits.pack(w.map { $0 >= 0 ? 1 : 0 }, bits: 1)))
    }

    /// An int8 weight whose zero point TFLite's int8 cannot hold (outside −128…127) is written as float32 with a
    /// note; the others stay int8.
    @Test func int8ZeroPointTFLiteCannotHoldIsDequantized() throws {
        var model = try ExportOracleTests.quantized(tinyClassifier(), QuantizeOptions(mode: .linear, bits: 8, asymmetric: true))
        let conv = try #require(model.tensors.firstIndex { $0.name == "conv1.w" })
        #expect(model.tensors[conv].dtype == .int8)
        let channels = try #require(model.tensors[conv].quant?.scales?.count)
        model.tensors[conv].quant?.zeroPoints = [Int](repeating: 200, count: channels)
        let notes = try Self.export(model, name: "tiny").notes
        #expect(notes.contains("conv1.w: int8 weights dequantized to float32"), "\(notes)")
        #expect(notes.contains { $0.hasPrefix("dw.w: int8 weights kept as int8 (per-channel scales on axis 3, zero points kept)") }, "\(notes)")
    }

    /// EfficientNet-Lite0 (models/efficientnet-lite0.bin) and the six photos its recipe keeps, preprocessed by the
    /// recipe, as one NHWC batch; nil after `skip` when `make models` has not made them.
    static func efficientNetLite0() throws -> (Model, Tensor)? {
        let dir = Paths.root.appendingPathComponent("models")
        let bin = dir.appendingPathComponent("efficientnet-lite0.bin").path
        let reference = dir.appendingPathComponent("efficientnet-lite0-reference")
        guard FileManager.default.fileExists(atPath: bin), FileManager.default.fileExists(atPath: reference.path) else {
            skip("no \(bin) or its reference photos (make models)")
            return nil
        }
        var nhwc = [Float]()
        let photos = ["chelsea", "coffee", "rocket", "astronaut", "china", "flower"]
        for p in photos {
            let d = [UInt8](try Data(contentsOf: reference.appendingPathComponent("\(p).input.f32")))
            let chw = d.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
            #expect(chw.count == 3 * 224 * 224)
            for i in 0..<(224 * 224) { for c in 0..<3 { nhwc.append(chw[c * 224 * 224 + i]) } }
        }
        return (try ModelFile.read(path: bin), Tensor(shape: [photos.count, 224, 224, 3], data: nhwc))
    }

    /// EfficientNet-Lite0, the default feature extractor, on the six photos its recipe keeps (preprocessed by the
    /// recipe): logits within 2e-6 of their range.
    @Test func efficientNetLite0MatchesTheEngine() throws {
        guard let (model, x) = try Self.efficientNetLite0() else { return }
        guard let (y, summary, _) = try Self.liteRT(model, x, tag: "efficientnet") else { return }
        let ops = summary["ops"] as? [String] ?? []
        #expect(ops.filter { $0 == "CONV_2D" }.count == 33 && ops.filter { $0 == "DEPTHWISE_CONV_2D" }.count == 16, "\(ops)")
        #expect(!ops.contains("PAD") && !ops.contains("RELU6"), "every pad is SAME or VALID, every ReLU6 fused")
        let expected = try run(model, x)
        let range = Double((expected.max() ?? 0) - (expected.min() ?? 0))
        // Measured worst: 1.62e-5 on logits of range 15.6 (1.04e-6 of it).
        assertClose(y, expected, atol: 2e-6 * range, "EfficientNet-Lite0: LiteRT vs the engine")
    }

    /// The export read back by mltool's own TFLite importer (`mltool import model.tflite`): EfficientNet-Lite0 on the
    /// same six photos gives the engine's logits on the original model, no LiteRT involved.
    @Test func efficientNetLite0ReimportsToTheSameOutputs() throws {
        guard let (model, x) = try Self.efficientNetLite0() else { return }
        let exported = try Self.export(model, name: "efficientnet")
        let back = try TFLiteImporter.importModel(bytes: exported.bytes, file: "efficientnet.tflite")
        let engine = try Engine(model: back, threads: 2)
        let input = try #require(engine.inputNames.first)
        let output = try #require(back.metadata.graph?.outputs.first)
        let y = try #require(try engine.run([input: x])[output])
        let expected = try run(model, x)
        let range = Double((expected.max() ?? 0) - (expected.min() ?? 0))
        print("TFLite round trip: max |re-imported − original| / range = "
              + String(format: "%.2e", Closeness.ratio(y.data, expected, atol: range)))
        // Measured: 9.2e-8 of the range (the same float ops, in another order where TFLite fuses differently).
        assertClose(y.data, expected, atol: 2e-7 * range, "EfficientNet-Lite0 exported to TFLite and imported again")
    }

    /// The Fashion-MNIST classifier of `make demo` (EfficientNet-Lite0 features, standardised, dense head), through
    /// the CLI: `mltool export --to tflite`, LiteRT on 50 test images vs `mltool predict --json`, for the float model
    /// and its int8 (`make demo-model`), 4-bit palette and fp16 versions (`mltool quantize` here). The compressed
    /// ones keep their weights compressed (int8, int8 from the palette's int8 table, float16); the int8 and palette
    /// exports read back by mltool's TFLite importer give `predict`'s outputs again. 18.6 s (5.9 s before the
    /// palette and the round trips).
    @Test func fashionMNISTModelMatchesPredict() throws {
        let demo = ProcessInfo.processInfo.environment["MLTOOL_FASHION_MODEL"] ?? Paths.root.appendingPathComponent(".build/demo/model.bin").path
        let test = Paths.root.appendingPathComponent("datasets/fashion-mnist-small/test")
        guard FileManager.default.fileExists(atPath: demo), FileManager.default.fileExists(atPath: test.path) else {
            return skip("no Fashion-MNIST model at \(demo) (make demo, or set MLTOOL_FASHION_MODEL) or no \(test.path)")
        }
        guard Oracles.mltoolBinary != nil else { return skip(Oracles.mltoolBinaryProblem) }
        var images = [String]()
        for l in try FileManager.default.contentsOfDirectory(atPath: test.path).filter({ !$0.hasPrefix(".") }).sorted() {
            let files = try FileManager.default.contentsOfDirectory(atPath: test.appendingPathComponent(l).path).sorted().prefix(5)
            images += files.map { test.appendingPathComponent(l).appendingPathComponent($0).path }
        }
        #expect(images.count == 50)
        let dir = try TempDir(tag: "export-tflite-fashion").url
        defer { try? FileManager.default.removeItem(at: dir) }
        let base = (demo as NSString).deletingPathExtension
        // The float16 and palette versions are made here (make demo-model writes only the int8 one).
        let fp16 = dir.appendingPathComponent("model.fp16.bin").path, palette4 = dir.appendingPathComponent("model.palette4.bin").path
        for (bits, path) in [("16", fp16), ("4", palette4)] {
            guard let made = try mltool(["quantize", demo, "--bits", bits, "--no-eval", "--quiet", "-o", path]) else { return }
            #expect(made.status == 0, "quantize --bits \(bits): \(made.stderr)")
        }
        var sizes = [String: Int]()
        for model in [demo, base + ".int8.bin", palette4, fp16] {
            guard FileManager.default.fileExists(atPath: model) else {
                skip("no \(model) (make demo-model writes it with `mltool quantize`)")
                continue
            }
            let tag = (model as NSString).lastPathComponent
            guard let predicted = try mltool(["predict", model] + images + ["--json", "--top", "100"]) else { return }
            #expect(predicted.status == 0, "predict: \(predicted.stderr)")
            let expected = try parsePredictions(predicted.stdout)
            let source = try ModelFile.read(path: model)
            let preprocessor = try ImagePreprocessor(try #require(source.metadata.image))
            var inputs = [Float]()
            for f in images { inputs += try preprocessor.process(try ImageDecoder.decode(path: f)) }
            let p = preprocessor.config
            let x = Tensor(shape: [images.count, p.height, p.width, preprocessor.channels], data: inputs)

            let file = dir.appendingPathComponent(tag + ".tflite").path
            guard let exported = try mltool(["export", model, "--to", "tflite", "-o", file]) else { return }
            #expect(exported.status == 0 && exported.stdout.contains("(tflite)"), "export: \(exported.stderr)")
            sizes[tag] = try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int
            let npy = dir.appendingPathComponent("x.npy"), out = dir.appendingPathComponent("y.npy")
            try writeNPY(x, to: npy)
            guard let text = try python("../tflite/run_tflite.py", [file, npy.path, out.path]) else { return }
            let summary = try json(text)
            #expect(summary["output_shape"] as? [Int] == [50, source.metadata.labels.count])
            let types = summary["tensor_types"] as? [String] ?? []
            #expect(types.contains("INT8") == (model != demo && model != fp16) && types.contains("FLOAT16") == (model == fp16), "\(tag): \(types)")
            var want = [Double]()
            for f in images {
                let row = try #require(expected[f], "no prediction for \(f)")
                want += source.metadata.labels.map { row[$0] ?? .nan }
            }
            let liteRT = try readNPYFloats(out)
            // Measured worst: 4.7e-6 (float), 4.1e-6 (int8), 1.9e-5 (palette4, at a probability of 0.6), 4.9e-6
            // (fp16) on probabilities (range 1); both sides compute in float (`mltool` runs predict with
            // MLTOOL_INT8_COMPUTE=off), in another order (XNNPACK's).
            let bar = model == palette4 ? 3e-5 : 1e-5
            assertClose(liteRT, want, atol: bar, "\(tag): LiteRT vs predict --json")
            print("TFLite \(tag): max |LiteRT − predict| " + String(format: "%.2e", Closeness.ratio(liteRT, want, atol: 1)))
            let classes = source.metadata.labels.count
            #expect(Self.top1Agreement(liteRT, want, classes: classes) == 50, "\(tag): LiteRT's top-1 vs predict's")

            if model == base + ".int8.bin" {
                // predict as it runs by default where the CPU has AVX2: int8 layers on the int8 kernels, each input
                // row quantized to 7 bits. Measured (AMD EPYC, AVX-512 VNNI): up to 5.4e-2 on a probability, the same
                // top-1 on 50 of 50. (The 4-bit palette model on those kernels: 47 of 50, against its own float
                // compute; it agrees with the float model on 16 of 50 either way: a lossy model, not the export.)
                guard let kernels = try mltool(["predict", model] + images + ["--json", "--top", "100"], int8Compute: "auto") else { return }
                let rows = try parsePredictions(kernels.stdout)
                let onKernels = try images.flatMap { f in
                    try source.metadata.labels.map { try #require(rows[f], "no prediction for \(f)")[$0] ?? .nan }
                }
                print("TFLite \(tag): max |LiteRT − predict on the int8 kernels| "
                      + String(format: "%.2e", Closeness.ratio(liteRT, onKernels, atol: 1)))
                #expect(Self.top1Agreement(liteRT, onKernels, classes: classes) >= 50, "\(tag): LiteRT's top-1 vs predict's on the int8 kernels")
            }

            // Read back by mltool's importer (DEQUANTIZE folds to float32 weights): predict's outputs again. The
            // compressed ones only (about 4 s each): the float and f16 round trips are efficientNetLite0's.
            guard model == base + ".int8.bin" || model == palette4 else { continue }
            let back = try TFLiteImporter.importModel(bytes: [UInt8](try Data(contentsOf: URL(fileURLWithPath: file))), file: file)
            let engine = try Engine(model: back, threads: 2)
            let input = try #require(engine.inputNames.first), output = try #require(back.metadata.graph?.outputs.first)
            let again = try #require(try engine.run([input: x])[output]).data
            print("TFLite \(tag): max |re-imported − predict| " + String(format: "%.2e", Closeness.ratio(again, want, atol: 1)))
            // Measured worst: 1.8e-7 (int8), 5.9e-7 (palette4): the engine's kernels on both sides.
            assertClose(again, want, atol: 1e-6, "\(tag): re-imported vs predict --json")
            #expect(Self.top1Agreement(again, want, classes: classes) == 50, "\(tag): re-imported top-1 vs predict's")
        }
        print("TFLite export sizes: \(sizes.sorted { $0.key < $1.key })")
        // Measured: float 13,481,794 bytes; int8 3,731,682 (0.2768 of it: the int8 weights, the small layers
        // --min-elements left in float32, the biases), palette4 with its int8 tables 3,734,850 (0.2770: the same int8
        // weights), fp16 6,818,226 (0.5057).
        if let float = sizes["model.bin"].map(Double.init) {
            if let s = sizes["model.int8.bin"] { #expect(Double(s) / float < 0.28, "int8: \(s) of \(float) bytes") }
            if let s = sizes["model.palette4.bin"] { #expect(Double(s) / float < 0.28, "palette4: \(s) of \(float) bytes") }
            if let s = sizes["model.fp16.bin"] { #expect(Double(s) / float < 0.51, "fp16: \(s) of \(float) bytes") }
        }
    }

    /// Rows (`classes` values each) of `a` whose largest value is at the same index as `b`'s.
    static func top1Agreement(_ a: [Float], _ b: [Double], classes: Int) -> Int {
        guard classes > 0, a.count == b.count else { return 0 }
        return (0..<(a.count / classes)).filter { r in
            let x = a[(r * classes)..<((r + 1) * classes)], y = b[(r * classes)..<((r + 1) * classes)]
            return x.indices.max { x[$0] < x[$1] } == y.indices.max { y[$0] < y[$1] }
        }.count
    }

    /// The TFLite Support metadata (M001) read back: the model's facts, the input's image properties and
    /// normalization on 0…255 pixels, the output's labels.txt, which the appended zip holds.
    @Test func supportMetadataDescribesInputAndLabels() throws {
        typealias Reader = FlatBufferBuilderTests.Reader
        let bytes = try Self.export(tinyClassifier(), name: "tiny").bytes
        let r = Reader(b: bytes)
        let model = r.root
        let entries = try #require(r.field(model, 6).map(r.vector))
        var found: Int?
        for i in 0..<entries.count {
            let e = r.deref(entries.start + 4 * i)
            if r.field(e, 0).map(r.string) == "TFLITE_METADATA" { found = r.field(e, 1).map(r.u32) }
        }
        let index = try #require(found)
        let buffers = try #require(r.field(model, 4).map(r.vector))
        let data = try #require(r.field(r.deref(buffers.start + 4 * index), 0).map(r.vector))
        let m = Reader(b: Array(bytes[data.start..<(data.start + data.count)]))
        #expect(Array(m.b[4..<8]) == Array("M001".utf8))
        let root = m.root
        #expect([0, 1, 2, 4, 5, 7].map { m.field(root, $0).map(m.string) }
                == ["tiny", "a tiny classifier built in code", "1.2", "mltool tests", "MIT", "1.0.0"])
        let subgraph = m.deref(try #require(m.field(root, 3).map(m.vector)).start)
        let input = m.deref(try #require(m.field(subgraph, 2).map(m.vector)).start)
        #expect(m.field(input, 0).map(m.string) == "input")
        let content = try #require(m.field(input, 3).map(m.deref))
        #expect(m.field(content, 0).map { m.b[$0] } == 2, "ImageProperties")
        let image = try #require(m.field(content, 1).map(m.deref))
        #expect(m.field(image, 0).map { m.b[$0] } == 1, "RGB")
        let size = try #require(m.field(image, 1).map(m.deref))
        #expect(m.field(size, 0).map(m.u32) == 12 && m.field(size, 1).map(m.u32) == 12)
        let unit = m.deref(try #require(m.field(input, 4).map(m.vector)).start)
        #expect(m.field(unit, 0).map { m.b[$0] } == 1, "NormalizationOptions")
        let normalization = try #require(m.field(unit, 1).map(m.deref))
        // (pixel / 127.5 − 1) = (pixel − 127.5) / 127.5.
        for slot in [0, 1] {
            let v = try #require(m.field(normalization, slot).map(m.vector))
            // 1 / Float(1 / 127.5) is 127.49999 in float32.
            assertClose((0..<v.count).map { Float(bitPattern: UInt32(m.u32(v.start + 4 * $0))) }, [127.5, 127.5, 127.5], atol: 1e-4,
                        "NormalizationOptions slot \(slot)")
        }
        let output = m.deref(try #require(m.field(subgraph, 3).map(m.vector)).start)
        #expect(m.field(output, 0).map(m.string) == "probabilities")
        let file = m.deref(try #require(m.field(output, 6).map(m.vector)).start)
        #expect(m.field(file, 0).map(m.string) == "labels.txt" && m.field(file, 2).map { m.b[$0] } == 2, "TENSOR_AXIS_LABELS")

        // The zip after the flatbuffer: its end record, then labels.txt stored at the offset the directory gives.
        let end = bytes.count - 22
        #expect(r.u32(end) == 0x0605_4b50 && r.u16(end + 10) == 1)
        let directory = r.u32(end + 16)
        #expect(r.u32(directory) == 0x0201_4b50)
        let local = r.u32(directory + 42)
        #expect(r.u32(local) == 0x0403_4b50)
        let labels = Array(bytes[(local + 30 + 10)..<(local + 30 + 10 + r.u32(local + 18))])
        #expect(String(decoding: labels, as: UTF8.self) == "circle\nsquare\nstripes\n")
        #expect(r.u32(local + 14) == Int(TFLiteMetadata.crc32(labels)))
        #expect(TFLiteMetadata.crc32(Array("123456789".utf8)) == 0xcbf4_3926, "the CRC-32 check value")
    }

    /// An op without a TFLite mapping is refused with the node's name and why.
    @Test func unmappedOpIsRefusedNamingTheNode() throws {
        var model = tinyClassifier()
        var graph = try #require(model.metadata.graph)
        graph.nodes[graph.nodes.count - 1].op = .logSoftmax
        model.metadata.graph = graph
        #expect(throws: ExportError.unsupported(model: "tiny", format: "TensorFlow Lite", place: "node 'softmax' (logSoftmax)",
                                                reason: "needs a TensorFlow Lite lowering for logSoftmax (not yet supported)")) {
            try Self.export(model, name: "tiny")
        }
        graph.nodes[graph.nodes.count - 1].op = .softmax
        graph.nodes[graph.nodes.count - 1].attributes.axis = 0
        model.metadata.graph = graph
        #expect(throws: ExportError.unsupported(model: "tiny", format: "TensorFlow Lite", place: "node 'softmax' (softmax)",
                                                reason: "needs softmax over the last axis (TFLite's only)")) {
            try Self.export(model, name: "tiny")
        }
    }
}
