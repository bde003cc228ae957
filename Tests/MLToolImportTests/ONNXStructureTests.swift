import Foundation
import MLToolCore
import Testing
@testable import MLToolImport

/// What the importer writes into the IR: layouts, attributes and folded constants (independent of the engine).
@Suite struct ONNXStructureTests {
    static func load(_ name: String, _ options: ImportOptions = ImportOptions()) throws -> (Model, Graph) {
        let m = try ONNXImporter.importModel(path: ONNXFixtures.path(name), options: options)
        return (m, try #require(m.metadata.graph))
    }

    @Test func reshapeOfNonUnitSpatialGoesThroughNCHW() throws {
        let (_, g) = try Self.load("flatten_nchw.onnx")
        #expect(g.inputs.map { [$0.name: $0.shape] } == [["x": [-1, 7, 6, 3]]])
        #expect(g.inputs.map(\.dimensionNames) == [["N", "", "", ""]])   // the file's name of the free batch
        #expect(g.sourceLayout == "nchw")
        // Shape → Gather → Unsqueeze → Concat folded: the view is one reshape after a transpose to NCHW.
        let view = try #require(g.nodes.first { $0.name == "view" })
        #expect(view.op == .reshape)
        #expect(view.attributes.shape == [-1, 144])
        let producer = try #require(g.nodes.first { $0.outputs == view.inputs })
        #expect(producer.op == .transpose && producer.attributes.perm == [0, 3, 1, 2])
        #expect(!g.nodes.contains { $0.name == "shape" || $0.name == "gather" || $0.name == "concat_shape" })
        // A reshape to a rank-4 (N,6,4,6) tensor runs in NCHW order and is transposed back to NHWC.
        let back = try #require(g.nodes.first { $0.name == "reshape4.to_nhwc" })
        #expect(back.op == .transpose && back.attributes.perm == [0, 2, 3, 1] && back.outputs == ["c4"])
        // ONNX Transpose [0,2,3,1]: (N,C,H,W) → (N,H,W,C). In the IR the input is (N,H,W,C) and the output, being
        // rank 4, is stored NHWC of (N,H,W,C), i.e. (N,W,C,H): perm [0,2,3,1] of the IR input.
        let t = try #require(g.nodes.first { $0.name == "transpose" })
        #expect(t.attributes.perm == [0, 2, 3, 1])
        // Pad (input form): NCHW begin/end lists → NHWC.
        let pad = try #require(g.nodes.first { $0.op == .pad })
        #expect(pad.attributes.pads == [0, 1, 2, 0, 0, 1, 0, 0])
        #expect(pad.attributes.mode == "reflect")
    }

    /// DequantizeLinear on initializers (int8 per-channel, uint8 per-tensor, and a QuantizeLinear → DequantizeLinear
    /// pair on a float constant) folds away, and the weights stay int8 in IR layout with their parameters.
    @Test func quantizedWeightsStayInt8() throws {
        let (m, g) = try Self.load("qdq_weights.onnx")
        #expect(!g.nodes.contains { $0.name.hasSuffix(".dq") || $0.name == "fc.q" })
        let byName = Dictionary(uniqueKeysWithValues: m.tensors.map { ($0.name, $0) })
        func input(_ node: String, _ k: Int) throws -> String { try #require(g.nodes.first { $0.name == node }).inputs[k] }
        let c1 = try #require(byName[try input("c1", 1)])
        // OIHW (8,3,3,3) per output channel (axis 0) → HWIO, axis 3.
        #expect(c1.dtype == .int8 && c1.shape == [3, 3, 3, 8] && c1.quant?.axis == 3 && c1.quant?.scales?.count == 8)
        let c2 = try #require(byName[try input("c2", 1)])
        // uint8 codes with zero point 131 are int8 codes − 128 with zero point 3.
        #expect(c2.dtype == .int8 && c2.quant?.axis == nil && c2.quant?.scales == [0.01] && c2.quant?.zeroPoints == [3])
        let fc = try #require(byName[try input("fc", 1)])
        #expect(fc.dtype == .int8 && fc.shape == [4, 5] && fc.quant?.axis == 1 && fc.quant?.zeroPoints == [0, 0, 0, 0, 0])
        #expect(m.tensors.filter { $0.dtype == .f32 }.map(\.name) == [try input("c1", 2)])
    }

    @Test func axesAndAutoPadding() throws {
        let (_, g) = try Self.load("depthwise_cnn.onnx")
        #expect(g.nodes.first { $0.op == .concat }?.attributes.axis == 3)
        #expect(g.nodes.first { $0.op == .softmax }?.attributes.axis == 3)
        // SAME_LOWER, 2×2/2 on 4×5: the odd column of padding goes on the left.
        let same = try #require(g.nodes.first { $0.name == "avgpool_same" })
        #expect(same.attributes.pads == [0, 1, 0, 0])
        #expect(same.attributes.countIncludePad == true)
        let ceil = try #require(g.nodes.first { $0.name == "avgpool" })
        #expect(ceil.attributes.ceilMode == true && ceil.attributes.countIncludePad == false)
        // Depthwise weights (OC, 1, KH, KW) → (KH, KW, 1, OC), groups kept.
        let dw = try #require(g.nodes.first { $0.op == .conv && $0.attributes.groups == 8 })
        #expect(dw.attributes.kernel == [5, 5] && dw.attributes.pads == [1, 1, 2, 2])
    }

    @Test func convWeightsAreKHKWCinOC() throws {
        let onnx = try ONNXFile(path: ONNXFixtures.path("flatten_nchw.onnx"))
        let w = try #require(onnx.initializers["cw"])                  // (6, 3, 3, 3) OIHW
        let (m, g) = try Self.load("flatten_nchw.onnx")
        let conv = try #require(g.nodes.first { $0.name == "conv" })
        let stored = try #require(m.tensor(named: conv.inputs[1]))
        #expect(stored.shape == [3, 3, 3, 6])
        let v = try stored.floats()
        // element (kh, kw, c, oc) = w[oc][c][kh][kw]
        for (kh, kw, c, oc) in [(0, 0, 0, 0), (2, 1, 0, 5), (1, 2, 2, 3)] {
            #expect(v[((kh * 3 + kw) * 3 + c) * 6 + oc] == Float(w.values[((oc * 3 + c) * 3 + kh) * 3 + kw]))
        }
        #expect(conv.attributes.strides == [2, 1])
    }

    @Test func gemmTransBAlphaBeta() throws {
        let onnx = try ONNXFile(path: ONNXFixtures.path("mlp_opset9.onnx"))
        let w1 = try #require(onnx.initializers["w1"]), b1 = try #require(onnx.initializers["b1"])
        let (m, g) = try Self.load("mlp_opset9.onnx")
        let fc1 = try #require(g.nodes.first { $0.name == "fc1" })
        #expect(fc1.op == .dense)
        let w = try #require(m.tensor(named: fc1.inputs[1]))
        #expect(w.shape == [10, 16])
        let wv = try w.floats(), bv = try #require(m.tensor(named: fc1.inputs[2])).floats()
        #expect(wv[3 * 16 + 7] == Float(w1.values[7 * 10 + 3] * 0.5))   // (IN, OUT) = alpha · Bᵀ
        #expect(bv[4] == Float(b1.values[4] * 2))                       // beta · C
        // Clip in its attribute form (opset < 11) fused or standalone, with the attribute bounds.
        let clip = g.nodes.compactMap { $0.op == .clip ? ($0.attributes.min, $0.attributes.max) : ($0.attributes.activation?.op == .clip ? ($0.attributes.activation?.min, $0.attributes.activation?.max) : nil) }
        #expect(clip.count == 1 && clip.first?.0 == -1 && clip.first?.1 == 2)
        #expect(m.metadata.outputKind == "probabilities")
        #expect(m.metadata.task == .network)
    }

    @Test func legacySoftmaxCoercesToTwoDimensions() throws {
        let (_, g) = try Self.load("softmax_legacy.onnx")
        let sm = try #require(g.nodes.first { $0.op == .softmax })
        #expect(sm.attributes.axis == 1)
        let reshape = try #require(g.nodes.first { $0.outputs == sm.inputs })
        #expect(reshape.op == .reshape && reshape.attributes.shape == [-1, 36])
    }

    @Test func metadataFromOptions() throws {
        let labels = ["a", "b", "c", "d", "e"]
        let image = ImagePreprocessing(height: 12, width: 12, colorOrder: "bgr", scale: 1.0 / 255)
        let (m, _) = try Self.load("residual_cnn.onnx", ImportOptions(image: image, labels: labels, featureTensor: "feat"))
        #expect(m.metadata.task == .imageClassifier && m.metadata.labels == labels)
        #expect(m.metadata.featureTensor == "feat" && m.metadata.image == image)
        #expect(m.metadata.provenance.sources.first?.sha256 == (try SHA256.hex(fileAt: ONNXFixtures.path("residual_cnn.onnx"))))
        #expect(m.metadata.graph?.outputs == ["logits", "feat"])
        #expect(m.metadata.graph?.nodes.contains { $0.op == .batchNorm } == false)
    }

    @Test func unknownFeatureTensorIsAnError() {
        let p = ONNXFixtures.path("residual_cnn.onnx")
        #expect(throws: ImportError.invalid(file: p, place: "feature tensor", expected: "a tensor computed by the graph", actual: "'nope'")) {
            _ = try ONNXImporter.importModel(path: p, options: ImportOptions(featureTensor: "nope"))
        }
    }

    @Test func freeSpatialSizePadsPerInputSize() throws {
        // Free: the conv keeps SAME_UPPER and the engine pads per input size (ONNXDynamicShapeTests runs it).
        let (_, free) = try Self.load("free_size.onnx", ImportOptions())
        #expect(free.inputs.map { [$0.name: $0.shape] } == [["x": [-1, -1, -1, 3]]])
        #expect(free.inputs.map(\.dimensionNames) == [["N", "H", "W", ""]])
        let conv = try #require(free.nodes.first { $0.op == .conv })
        #expect(conv.attributes.autoPad == "SAME_UPPER" && conv.attributes.pads == nil)
        // Pinned with --input-size: the pads are resolved at import.
        let (_, g) = try Self.load("free_size.onnx", ImportOptions(inputSize: (height: 9, width: 11)))
        #expect(g.inputs.map { [$0.name: $0.shape] } == [["x": [-1, 9, 11, 3]]])
        #expect(g.inputs.map(\.dimensionNames) == [["N", "", "", ""]])   // the pinned sizes lose their names
        // SAME_UPPER 3×3/2 on 9×11: totals 2 and 2 → one row/column each side.
        #expect(g.nodes.first { $0.op == .conv }?.attributes.pads == [1, 1, 1, 1])
    }

    @Test func labelsMustMatchTheOutput() {
        let p = ONNXFixtures.path("residual_cnn.onnx")
        #expect(throws: ImportError.invalid(file: p, place: "labels", expected: "5 names (one per class of output 'logits')", actual: "2")) {
            _ = try ONNXImporter.importModel(path: p, options: ImportOptions(labels: ["a", "b"]))
        }
        #expect(throws: ImportError.invalid(file: p, place: "input size", expected: "12×12 (the model's input 'x')", actual: "224×224")) {
            _ = try ONNXImporter.importModel(path: p, options: ImportOptions(image: .efficientNetLite))
        }
    }
}
