import Foundation
import MLToolCore
import MLToolEngine
import MLToolTestSupport
import Testing
@testable import MLToolImport

/// Dynamically quantized ONNX (Tests/Fixtures/onnx/make_dynamic_int8.py, committed): ConvInteger chains as
/// `quantize_dynamic` writes them (uint8 per tensor, int8 per channel) and as ddddocr's older quantizer did (a bias
/// quantized at run time), com.microsoft.DynamicQuantizeLSTM and MatMulInteger. Each imports as its float layer on
/// int8 weights reading the codes of its input's DynamicQuantizeLinear (a `quantize` in mode "dynamic"): its outputs
/// are onnxruntime's int8 run of the file (exact integer sums of the same uint8 codes) to float rounding, and the
/// float graph those weights stand for (no activation rounding) within the difference that rounding makes.
@Suite struct ONNXDynamicInt8Tests {
    struct Manifest: Decodable { let cases: [ONNXFixtures.Case]; let int8: [ONNXFixtures.Case] }

    static func manifest() throws -> Manifest {
        let data = try Data(contentsOf: URL(fileURLWithPath: ONNXFixtures.path("dynamic-int8/manifest.json")))
        return try JSONDecoder().decode(Manifest.self, from: data)
    }

    static func model(_ name: String) throws -> Model {
        try ONNXImporter.importModel(path: ONNXFixtures.path("dynamic-int8/\(name).onnx"), options: ImportOptions())
    }

    /// Runs every case of `name` on the reference kernels and the fast path: within `float` of each output's range
    /// of the float graph's outputs, and within `onnxruntime` of it of onnxruntime's int8 run.
    static func check(_ name: String, float: Double, onnxruntime: Double,
                      sourceLocation: SourceLocation = #_sourceLocation) throws {
        let imported = try model(name)
        let m = try manifest()
        let cases = m.cases.filter { $0.model == name + ".onnx" }, int8 = m.int8.filter { $0.model == name + ".onnx" }
        #expect(cases.count == 2 && int8.count == 2, sourceLocation: sourceLocation)
        for mode in [Engine.Mode.reference, .fast] {
            let engine = try Engine(model: imported, threads: 2, mode: mode)
            for (k, (c, q)) in zip(cases, int8).enumerated() {
                var feeds: [String: Tensor] = [:]
                for i in c.inputs { feeds[i.name] = ONNXFixtures.toNHWC(try ONNXFixtures.load(i, under: "dynamic-int8")) }
                let got = try engine.run(feeds, outputs: c.outputs.map(\.name))
                for (o, r) in zip(c.outputs, q.outputs) {
                    let actual = ONNXFixtures.toNCHW(try #require(got[o.name], sourceLocation: sourceLocation)).data
                    let reference = try ONNXFixtures.load(o, under: "dynamic-int8").data
                    let ort = try ONNXFixtures.load(r, under: "dynamic-int8").data
                    let range = Double((reference.max() ?? 0) - (reference.min() ?? 0))
                    let what = "\(name) case \(k) \(mode) '\(o.name)'"
                    print("\(what): |mltool − float graph| / range = "
                          + String(format: "%.2e", Closeness.ratio(actual, reference, atol: range))
                          + ", |mltool − onnxruntime int8| / range = " + String(format: "%.2e", Closeness.ratio(actual, ort, atol: range)))
                    assertClose(actual, reference, atol: float * range, "\(what) vs the float graph", sourceLocation: sourceLocation)
                    assertClose(actual, ort, atol: onnxruntime * range, "\(what) vs onnxruntime's int8 run", sourceLocation: sourceLocation)
                }
            }
        }
    }

    static func ops(_ m: Model) -> [Op] { m.metadata.graph?.nodes.map(\.op) ?? [] }

    /// How many conv, dense and matMul layers read int8 weights.
    static func int8Layers(_ m: Model) -> Int {
        (m.metadata.graph?.nodes ?? []).filter {
            [.conv, .dense, .matMul].contains($0.op) && $0.inputs.count > 1 && m.tensor(named: $0.inputs[1])?.dtype == .int8
        }.count
    }

    @Test func quantizeDynamicConvolutionsAreConvolutionsOnInt8Weights() throws {
        for name in ["conv_dynamic", "conv_dynamic_per_channel"] {
            let m = try Self.model(name)
            #expect(Self.int8Layers(m) == 3, "\(name)")
            // Measured: 2.2e-7 of the range from onnxruntime's run; 5.0e-3 from the float graph, whose activations
            // are not rounded to uint8.
            try Self.check(name, float: 6e-3, onnxruntime: 3e-7)
        }
    }

    @Test func aBiasQuantizedAtRunTimeIsTheFloatBias() throws {
        // ddddocr's older quantizer: Floor(b / (xs·Ws)) added in int32. The conv takes b itself (within one step of
        // the output's scale of what onnxruntime adds: the 1.5e-3 from its run).
        let m = try Self.model("conv_runtime_bias")
        #expect(Self.int8Layers(m) == 2)
        #expect(Self.ops(m) == [.quantize, .conv, .quantize, .conv])   // the Sigmoids fused, no bias arithmetic left
        try Self.check("conv_runtime_bias", float: 4e-3, onnxruntime: 2e-3)   // measured 3.4e-3 and 1.5e-3
    }

    @Test func dynamicQuantizeLSTMIsAnLSTM() throws {
        let m = try Self.model("lstm_dynamic")
        #expect(Self.ops(m).contains(.lstm))
        #expect(Self.int8Layers(m) == 1)   // the MatMulInteger after it
        // Measured: 2.7e-3 from the float graph (the MatMulInteger after it reads uint8 codes; the LSTM's own
        // outputs h and c 1.9e-7); 3.3e-2 from onnxruntime's run, which rounds x and h to uint8 at every step
        // (11 steps each way) where mltool's LSTM multiplies the dequantized weights in float.
        try Self.check("lstm_dynamic", float: 3e-3, onnxruntime: 0.04)
    }
}
