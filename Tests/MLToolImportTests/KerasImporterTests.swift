import Foundation
import MLToolCore
import Testing
@testable import MLToolImport

/// The graphs and weight layouts the Keras importer produces for the real Keras 2 and Keras 3 fixtures (no engine).
@Suite struct KerasImporterTests {
    static let versions = ["k2", "k3"]

    func load(_ name: String, _ options: ImportOptions = ImportOptions()) throws -> (Model, Graph) {
        let model = try KerasImporter.importModel(path: KerasFixture.path(name + ".h5"), options: options)
        return (model, try #require(model.metadata.graph))
    }

    func node(_ graph: Graph, _ name: String) throws -> Node {
        try #require(graph.nodes.first { $0.name == name }, "no node '\(name)'")
    }

    @Test(arguments: versions)
    func sequentialMLP(_ v: String) throws {
        let (model, g) = try load(v + "_mlp")
        #expect(g.sourceLayout == "nhwc")
        #expect(g.inputs == [GraphInput(name: "features", shape: [-1, 10])])
        #expect(g.nodes.map(\.op) == [.dense, .dense, .dense, .sigmoid, .dense, .softmax])
        #expect(try node(g, "fc1").attributes.activation == .relu)
        #expect(try node(g, "fc2").attributes.activation == Activation(op: .tanh))
        #expect(try node(g, "fc3").attributes.activation == nil)
        // Dropout is the identity: fc2 reads fc1 directly.
        #expect(try node(g, "fc2").inputs == ["fc1", "fc2.kernel", "fc2.bias"])
        #expect(try node(g, "probs.softmax").attributes.axis == 1)
        #expect(g.outputs == ["probs"])
        #expect(model.tensor(named: "fc1.kernel")?.shape == [10, 16])
        #expect(model.tensor(named: "probs.bias")?.shape == [5])
        #expect(model.metadata.outputKind == "probabilities")
        #expect(model.metadata.task == .network)
        #expect(model.metadata.name == "mlp")
        #expect(model.parameterCount == 10 * 16 + 16 + 16 * 12 + 12 + 12 * 12 + 12 + 12 * 5 + 5)
    }

    @Test(arguments: versions)
    func functionalResidualCNN(_ v: String) throws {
        let (model, g) = try load(v + "_residual_cnn")
        #expect(g.inputs == [GraphInput(name: "image", shape: [-1, 12, 12, 3])])
        // Rescaling(1/127.5, offset -1) is a multiply then an add by constants.
        let scale = try node(g, "rescale.scale"), offset = try node(g, "rescale")
        #expect(scale.op == .mul && offset.op == .add)
        #expect(try model.tensor(named: "rescale.scale")?.floats() == [Float(1.0 / 127.5)])
        #expect(try model.tensor(named: "rescale.offset")?.floats() == [-1])
        let add = try node(g, "residual")
        #expect(add.op == .add && add.inputs == ["conv1", "bn2b"])
        let conv1 = try node(g, "conv1")
        #expect(conv1.attributes.pads == [1, 1, 1, 1] && conv1.attributes.strides == [1, 1])
        #expect(conv1.attributes.activation == .relu)
        let conv3 = try node(g, "conv3")
        #expect(conv3.attributes.pads == [0, 0, 0, 0] && conv3.attributes.strides == [2, 2])
        #expect(try node(g, "bn2a").op == .batchNorm)
        #expect(abs((try node(g, "bn2a").attributes.epsilon ?? 0) - 1e-3) < 1e-9)
        let pool = try node(g, "pool")
        #expect(pool.op == .maxPool && pool.attributes.kernel == [2, 2] && pool.attributes.strides == [2, 2])
        #expect(try node(g, "flatten").op == .flatten)
        #expect(model.metadata.outputKind == "logits")
        // Kernels keep Keras's (KH, KW, C, OC) layout: the same bytes as the file.
        #expect(model.tensor(named: "conv3.kernel")?.shape == [3, 3, 8, 6])
        #expect(model.tensor(named: "logits.kernel")?.shape == [2 * 2 * 6, 4])
    }

    @Test(arguments: versions)
    func mobileNetDepthwise(_ v: String) throws {
        let (model, g) = try load(v + "_mobilenet")
        // 15×15 stride 2 'same': out 8, total pad 2 → 1 / 1.
        #expect(try node(g, "stem").attributes.pads == [1, 1, 1, 1])
        // 8×8 stride 2 'same' 3×3: out 4, total pad 1 → 0 before, 1 after (TensorFlow's asymmetric padding).
        let dw = try node(g, "dw1")
        #expect(dw.op == .conv && dw.attributes.groups == 8 && dw.attributes.strides == [2, 2])
        #expect(dw.attributes.pads == [0, 0, 1, 1])
        #expect(dw.inputs == ["stem_relu", "dw1.kernel"])
        // (KH, KW, C, multiplier) → (KH, KW, 1, C·multiplier).
        #expect(model.tensor(named: "dw1.kernel")?.shape == [3, 3, 1, 16])
        #expect(try node(g, "stem_relu").op == .clip)
        #expect(try node(g, "stem_relu").attributes.max == 6)
        #expect(try node(g, "pw1_relu").op == .clip)
        // SeparableConv2D: depthwise (groups = C) then a 1×1 conv with bias and the fused relu.
        let sepDW = try node(g, "sep2.depthwise"), sep = try node(g, "sep2")
        #expect(sepDW.attributes.groups == 12 && sepDW.attributes.pads == [1, 1, 1, 1])
        #expect(sep.inputs == ["sep2.depthwise", "sep2.pointwise_kernel", "sep2.bias"])
        #expect(sep.attributes.activation == .relu)
        #expect(model.tensor(named: "sep2.depthwise_kernel")?.shape == [3, 3, 1, 12])
        #expect(try node(g, "gap.pool").op == .globalAvgPool && node(g, "gap").op == .flatten)
        #expect(model.metadata.outputKind == "probabilities")
        for bn in ["stem_bn", "dw1_bn", "pw1_bn"] { #expect(try node(g, bn).op == .batchNorm) }
    }

    @Test(arguments: versions)
    func remainingLayers(_ v: String) throws {
        let (_, g) = try load(v + "_zoo")
        let pad = try node(g, "zpad")
        #expect(pad.op == .pad && pad.attributes.pads == [0, 1, 0, 0, 0, 2, 1, 0] && pad.attributes.mode == "constant")
        // 12×10 input, 3×3 stride 2 'same': pads (0, 1) on both axes.
        #expect(try node(g, "conv_a").attributes.pads == [0, 0, 1, 1])
        #expect(try node(g, "conv_a").attributes.activation == Activation(op: .swish))
        let avg = try node(g, "avg")
        #expect(avg.op == .avgPool && avg.attributes.countIncludePad == false && avg.attributes.pads == [0, 0, 1, 1])
        // hard_sigmoid changed in Keras 3: relu6(x + 3) / 6 instead of 0.2x + 0.5.
        let hard = try #require(try node(g, "conv_b").attributes.activation)
        #expect(hard.op == .hardSigmoid && hard.beta == 0.5)
        #expect(abs((hard.alpha ?? 0) - (v == "k2" ? 0.2 : 1.0 / 6.0)) < 1e-7)
        #expect(try node(g, "gate").op == .mul)
        #expect(try node(g, "cat").attributes.axis == 3 && node(g, "cat2").attributes.axis == 1)
        #expect(try node(g, "leaky").op == .leakyRelu && node(g, "leaky").attributes.alpha == 0.1)
        #expect(try node(g, "gmp.pool").op == .globalMaxPool)
        #expect(try node(g, "reshape").attributes.shape == [0, -1])
        #expect(try node(g, "to_image").attributes.shape == [0, 1, 1, 22])
        // A linear Activation is the identity: 'out' flattens 'head' directly.
        #expect(try node(g, "out").inputs == ["head"])
        #expect(!g.nodes.contains { $0.name == "lin" })
    }

    @Test(arguments: versions)
    func groupedDilatedAndMergeLayers(_ v: String) throws {
        let (model, g) = try load(v + "_zoo2")
        let grouped = try node(g, "grouped")
        #expect(grouped.attributes.groups == 2 && grouped.attributes.dilations == [2, 2])
        #expect(grouped.attributes.pads == [2, 2, 2, 2])
        #expect(model.tensor(named: "grouped.kernel")?.shape == [3, 3, 2, 8])
        #expect(abs((try node(g, "leaky").attributes.alpha ?? 0) - 0.3) < 1e-6)
        #expect(try node(g, "dw").attributes.activation == Activation(op: .tanh))
        #expect(try node(g, "diff").op == .sub)
        #expect(try node(g, "mean3.sum").op == .add && node(g, "mean3").op == .mul)
        #expect(try model.tensor(named: "mean3.scale")?.floats() == [Float(1) / 3])
        // ReLU(max_value 0.8, negative_slope 0.05): leaky then capped.
        #expect(try node(g, "capped.leaky").op == .leakyRelu && node(g, "capped").op == .clip)
        // Dense on an (N, H, W, C) tensor: matmul on the last axis, then the bias add with the fused relu.
        #expect(try node(g, "dense4d.matmul").op == .matMul && node(g, "dense4d").attributes.activation == .relu)
        #expect(try node(g, "gmp").op == .globalMaxPool)
        #expect(try node(g, "sm").op == .softmax && node(g, "sm").attributes.axis == 1)
        #expect(model.metadata.outputKind == "probabilities")
    }

    @Test(arguments: versions)
    func nestedModelsAreInlined(_ v: String) throws {
        let (model, g) = try load(v + "_nested")
        #expect(g.inputs.map(\.name) == ["image"])
        #expect(g.nodes.map(\.name) == ["backbone/conv", "backbone/bn", "backbone/relu", "head/gap.pool", "head/gap",
                                         "head/fc", "head/fc.softmax"])
        #expect(try node(g, "backbone/conv").inputs == ["image", "backbone/conv.kernel"])
        #expect(try node(g, "backbone/conv").attributes.pads == [0, 0, 1, 1])
        #expect(model.tensor(named: "backbone/conv.kernel")?.shape == [3, 3, 3, 6])
        #expect(model.tensor(named: "backbone/bn.moving_variance")?.shape == [6])
        #expect(model.tensor(named: "head/fc.kernel")?.shape == [6, 3])
        #expect(g.outputs == ["head/fc"])
        #expect(model.metadata.outputKind == "probabilities")
    }

    @Test(arguments: versions)
    func normalizationAndNumberOperands(_ v: String) throws {
        let (model, g) = try load(v + "_ops")
        // (x − mean) / max(√variance, 1e-7) as x · scale + offset.
        let scale = try #require(try model.tensor(named: "norm.scale")?.floats())
        #expect(abs(scale[0] - 0.5) < 1e-6 && abs(scale[1] - 2) < 1e-6 && abs(scale[2] - 1e7) < 1)
        #expect(try node(g, "norm.scale").op == .mul && node(g, "norm").op == .add)
        // x + 3.0 and x * (1/6): one tensor and a one-element constant in the number's position.
        let adds = g.nodes.filter { $0.op == .add && $0.inputs.first == "conv" }
        #expect(adds.count == 1)
        let three = try #require(adds.first?.inputs.last)
        #expect(try model.tensor(named: three)?.floats() == [3])
        let muls = g.nodes.filter { $0.op == .mul && $0.inputs.first == "relu6" }
        let sixth = try #require(muls.first?.inputs.last)
        #expect(try model.tensor(named: sixth)?.floats() == [Float(1.0 / 6.0)])
        // gap / 2.0 (Keras 3 TrueDivide, Keras 2 TFOpLambda math.truediv).
        let div = try #require(g.nodes.first { $0.op == .div })
        #expect(div.inputs.first == "gap")
        #expect(try model.tensor(named: div.inputs[1])?.floats() == [2])
    }

    @Test func fixedLengthStringsReadLikeVariableLength() throws {
        let (a, ga) = try load("k2_mlp")
        let (b, gb) = try load("k2_mlp_fixed_strings")
        #expect(ga == gb)
        #expect(try a.tensors.map { try $0.floats() } == b.tensors.map { try $0.floats() })
    }

    @Test func metadataRecordsOptionsAndProvenance() throws {
        let labels = ["a", "b", "c", "d", "e", "f"]
        let image = ImagePreprocessing(height: 15, width: 15, scale: 1.0 / 255)
        let (model, _) = try load("k3_mobilenet", ImportOptions(image: image, labels: labels, featureTensor: "gap"))
        #expect(model.metadata.task == .imageClassifier)
        #expect(model.metadata.labels == labels)
        #expect(model.metadata.image == image)
        #expect(model.metadata.featureTensor == "gap")
        let source = try #require(model.metadata.provenance.sources.first)
        #expect(source.sha256 == (try SHA256.hex(fileAt: KerasFixture.path("k3_mobilenet.h5"))))
        #expect(source.sha256.count == 64)
        #expect(model.metadata.description?.contains("Keras 3.15.1") == true)
    }

    @Test func labelCountMustMatchTheOutput() {
        let message = KerasFixture.message {
            try KerasImporter.importModel(path: KerasFixture.path("k3_mobilenet.h5"), options: ImportOptions(labels: ["x", "y"]))
        }
        #expect(message == "k3_mobilenet.h5: labels: expected 6 labels (one per output), found 2")
    }

    @Test func unknownFeatureTensorIsAnError() {
        let message = KerasFixture.message {
            try KerasImporter.importModel(path: KerasFixture.path("k3_mlp.h5"), options: ImportOptions(featureTensor: "nope"))
        }
        #expect(message == "k3_mlp.h5: feature tensor: expected a tensor of the graph, found 'nope'")
    }

    @Test func inputSizeMustAgreeWithAFixedInput() {
        let message = KerasFixture.message {
            try KerasImporter.importModel(path: KerasFixture.path("k3_mobilenet.h5"),
                                          options: ImportOptions(inputSize: (height: 32, width: 32)))
        }
        #expect(message == "k3_mobilenet.h5: input 'image' size: expected 15×15 (fixed by the model), found 32×32")
    }

    @Test func freeInputSizeTakesTheGivenSize() throws {
        let message = KerasFixture.message {
            try KerasImporter.importModel(path: KerasFixture.path("k3_free_size.h5"), options: ImportOptions())
        }
        #expect(message == "k3_free_size.h5: 1 node of 1 unsupported type:\n"
            + "  padding 'same' with stride 2 on a free input size (give --input-size) ×1 ('conv')")
        let (_, g) = try load("k3_free_size", ImportOptions(inputSize: (height: 9, width: 11)))
        #expect(g.inputs == [GraphInput(name: "image", shape: [-1, 9, 11, 3])])
        // H: 9 → 5 and W: 11 → 6, each with a total pad of 2 → (1, 1).
        #expect(try node(g, "conv").attributes.pads == [1, 1, 1, 1])
    }

    @Test func detectsHDF5ByContent() {
        #expect(KerasImporter.isHDF5(path: KerasFixture.path("k3_mlp.h5")))
        #expect(!KerasImporter.isHDF5(path: KerasFixture.path("k3_mlp.json")))
        #expect(!KerasImporter.isHDF5(path: KerasFixture.path("no_such_file.h5")))
        #expect(!KerasImporter.isHDF5(path: KerasFixture.directory.path))
    }

    @Test func duplicateLayerNamesAreAnError() {
        let json = """
        {"class_name": "Sequential", "config": {"name": "s", "layers": [
          {"class_name": "InputLayer", "config": {"name": "x", "batch_shape": [null, 3]}},
          {"class_name": "Dense", "config": {"name": "d", "units": 2}}, {"class_name": "Dense", "config": {"name": "d", "units": 2}}]}}
        """
        #expect(KerasFixture.message { try KerasModelConfig.parse(json, file: "m.h5") }
            == "m.h5: model_config layer 'd': expected unique layer names, found a second layer of that name")
    }

    @Test func weightShapesAreChecked() throws {
        let weights = ["conv1": KerasLayerWeights(entries: [.init(name: "conv1/kernel:0", shape: [3, 3, 1, 8],
                                                                  data: [Float](repeating: 0, count: 72))])]
        let b = KerasGraphBuilder(file: "model.h5", kerasMajor: 2, weights: weights, inputSize: nil)
        #expect(KerasFixture.message { try b.requiredWeight("conv1", "kernel", expected: [3, 3, 3, 8]) }
            == "model.h5: layer 'conv1' kernel: expected shape [3,3,3,8], found [3,3,1,8]")
        #expect(KerasFixture.message { try b.requiredWeight("conv1", "bias", expected: [8]) }
            == "model.h5: layer 'conv1' bias: expected a weight in model_weights, found only conv1/kernel:0")
        #expect(try b.requiredWeight("conv1", "kernel", expected: [3, 3, -1, 8]).shape == [3, 3, 1, 8])
    }

    // MARK: - Pieces

    func convert(_ className: String, _ config: [String: Any], input shape: [Int],
                 weights: [KerasLayerWeights.Entry] = []) throws -> KerasGraphBuilder {
        try KerasFixture.convert(className, config, input: shape, weights: weights)
    }

    @Test func batchNormWithoutScaleOrCenterUsesOnesAndZeros() throws {
        let stats = [KerasLayerWeights.Entry(name: "l/moving_mean", shape: [3], data: [1, 2, 3]),
                     .init(name: "l/moving_variance", shape: [3], data: [4, 5, 6])]
        let b = try convert("BatchNormalization", ["axis": -1, "epsilon": 0.01, "center": false, "scale": false],
                            input: [-1, 4, 4, 3], weights: stats)
        let node = try #require(b.nodes.first)
        #expect(node.op == .batchNorm && node.inputs == ["x", "l.gamma", "l.beta", "l.moving_mean", "l.moving_variance"])
        #expect(try b.tensors.first { $0.name == "l.gamma" }?.floats() == [1, 1, 1])
        #expect(try b.tensors.first { $0.name == "l.beta" }?.floats() == [0, 0, 0])
        #expect(abs((node.attributes.epsilon ?? 0) - 0.01) < 1e-9)
        #expect(KerasFixture.message { try convert("BatchNormalization", ["axis": 0], input: [-1, 4, 4, 3], weights: stats) }
            == "m.h5: 1 node of 1 unsupported type:\n  BatchNormalization (axis [0] of a rank-4 tensor; one non-batch axis) ×1 ('l')")
        #expect(KerasFixture.message { try convert("BatchNormalization", ["axis": [1, 2]], input: [-1, 4, 4, 3], weights: stats) }
            == "m.h5: 1 node of 1 unsupported type:\n  BatchNormalization (axis [1, 2] of a rank-4 tensor; one non-batch axis) ×1 ('l')")
        #expect(KerasFixture.message { try convert("BatchNormalization", ["axis": 3], input: [-1, 4, 4, 3], weights: []) }
            == "m.h5: layer 'l' moving_mean: expected a weight in model_weights, found no weights")
    }

    /// Sizes in a config come from the file: huge ones throw instead of overflowing.
    @Test func hugeSizesThrow() throws {
        let big = 1 << 30
        #expect(throws: ImportError.self) { try convert("Flatten", [:], input: [-1, big, big, big]) }
        #expect(throws: ImportError.self) { try convert("Reshape", ["target_shape": [-1]], input: [-1, big, big, big]) }
        #expect(throws: ImportError.self) {
            try convert("Conv2D", ["filters": 2, "kernel_size": [big, big], "dilation_rate": [big, big], "padding": "same",
                                   "strides": [2, 2]], input: [-1, big, big, 3])
        }
        #expect(throws: ImportError.self) {
            try convert("Conv2D", ["filters": 2, "kernel_size": [Double(1 << 62), 3]], input: [-1, 8, 8, 3])
        }
        #expect(throws: ImportError.self) {
            try convert("DepthwiseConv2D", ["kernel_size": [1, 1], "depth_multiplier": 3], input: [-1, 8, 8, -1])
        }
    }

    @Test func rescalingPerChannel() throws {
        let b = try convert("Rescaling", ["scale": [1, 2, 3], "offset": 0], input: [-1, 2, 2, 3])
        #expect(b.nodes.map(\.op) == [.mul])
        #expect(try b.tensors.first?.floats() == [1, 2, 3])
        let identity = try convert("Rescaling", ["scale": 1, "offset": 0], input: [-1, 2, 2, 3])
        #expect(identity.nodes.isEmpty)
    }

    @Test func zeroPaddingForms() throws {
        for (padding, pads) in [(2 as Any, [0, 2, 2, 0, 0, 2, 2, 0]), ([1, 3] as Any, [0, 1, 3, 0, 0, 1, 3, 0]),
                                ([[1, 2], [3, 4]] as Any, [0, 1, 3, 0, 0, 2, 4, 0])] {
            let b = try convert("ZeroPadding2D", ["padding": padding], input: [-1, 5, 5, 1])
            #expect(b.nodes.first?.attributes.pads == pads)
        }
    }

    @Test func samePaddingFollowsTensorFlow() throws {
        let b = KerasGraphBuilder(file: "m.h5", kerasMajor: 3, weights: [:], inputSize: nil)
        // (input, kernel, stride, dilation) → (out, begin, end)
        let cases: [((Int, Int, Int, Int), (Int, Int, Int))] = [
            ((224, 3, 2, 1), (112, 0, 1)), ((225, 3, 2, 1), (113, 1, 1)), ((7, 1, 2, 1), (4, 0, 0)),
            ((10, 5, 1, 1), (10, 2, 2)), ((10, 4, 1, 1), (10, 1, 2)), ((9, 3, 1, 2), (9, 2, 2)),
            ((5, 7, 3, 1), (2, 2, 3)),
        ]
        for ((i, k, s, d), want) in cases {
            let w = try b.window(i, kernel: k, stride: s, dilation: d, padding: "same", place: "x")
            #expect(w.size == want.0 && w.begin == want.1 && w.end == want.2, "in \(i) k \(k) s \(s) d \(d)")
        }
        #expect(try b.window(12, kernel: 3, stride: 2, dilation: 1, padding: "valid", place: "x").size == 5)
        #expect(throws: ImportError.self) { try b.window(-1, kernel: 3, stride: 2, dilation: 1, padding: "same", place: "x") }
        #expect(try b.window(-1, kernel: 3, stride: 1, dilation: 1, padding: "same", place: "x").size == -1)
    }

    @Test func keras3InboundNodesAndSingleInputLayers() throws {
        let json = """
        {"class_name": "Functional", "config": {"name": "m", "layers": [
          {"class_name": "InputLayer", "name": "x", "config": {"name": "x", "batch_shape": [null, 4]}, "inbound_nodes": []},
          {"class_name": "Dense", "name": "d", "config": {"name": "d", "units": 2},
           "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__", "config": {"shape": [null, 4], "keras_history": ["x", 0, 0]}}], "kwargs": {}}]},
          {"class_name": "Add", "name": "s", "config": {"name": "s"},
           "inbound_nodes": [{"args": [[{"class_name": "__keras_tensor__", "config": {"keras_history": ["d", 0, 0]}},
                                         {"class_name": "__keras_tensor__", "config": {"keras_history": ["d", 1, 0]}}]], "kwargs": {}}]}],
          "input_layers": ["x", 0, 0], "output_layers": [["s", 0, 0]]}}
        """
        let c = try KerasModelConfig.parse(json, file: "m.h5")
        #expect(c.inputs == [KerasTensorRef(layer: "x", node: 0, index: 0)])
        #expect(c.outputs == [KerasTensorRef(layer: "s", node: 0, index: 0)])
        #expect(c.layers[2].calls == [[KerasTensorRef(layer: "d", node: 0, index: 0), KerasTensorRef(layer: "d", node: 1, index: 0)]])
    }

    @Test func keras2InboundNodes() throws {
        let json = """
        {"class_name": "Model", "config": {"name": "m", "layers": [
          {"class_name": "InputLayer", "name": "x", "config": {"name": "x", "batch_input_shape": [null, 4]}, "inbound_nodes": []},
          {"class_name": "Concatenate", "name": "c", "config": {"name": "c", "axis": -1},
           "inbound_nodes": [[["x", 0, 0, {}], ["x", 0, 0, {}]]]}],
          "input_layers": [["x", 0, 0]], "output_layers": [["c", 0, 0]]}}
        """
        let c = try KerasModelConfig.parse(json, file: "m.h5")
        #expect(c.layers[1].calls == [[KerasTensorRef(layer: "x", node: 0, index: 0), KerasTensorRef(layer: "x", node: 0, index: 0)]])
    }

    @Test func sequentialWithoutInputLayerTakesTheFirstLayersShape() throws {
        let json = """
        {"class_name": "Sequential", "config": {"name": "s", "layers": [
          {"class_name": "Dense", "config": {"name": "d", "units": 2, "batch_input_shape": [null, 3]}}]}}
        """
        let c = try KerasModelConfig.parse(json, file: "m.h5")
        #expect(c.layers.map(\.className) == ["InputLayer", "Dense"])
        #expect(c.layers[1].calls == [[KerasTensorRef(layer: "input", node: 0, index: 0)]])
    }

    @Test func inputShapeForms() throws {
        for config: [String: Any] in [["batch_shape": [NSNull(), 5, 6, 3]], ["batch_input_shape": [NSNull(), 5, 6, 3]],
                                      ["shape": [5, 6, 3]]] {
            let layer = KerasLayer(name: "x", className: "InputLayer", config: config, entry: [:], calls: [])
            #expect(try KerasImporter.inputShape(layer, file: "m.h5", size: nil) == [-1, 5, 6, 3])
        }
        let free = KerasLayer(name: "x", className: "InputLayer", config: ["shape": [NSNull(), NSNull(), 3]], entry: [:],
                              calls: [])
        #expect(try KerasImporter.inputShape(free, file: "m.h5", size: (height: 7, width: 9)) == [-1, 7, 9, 3])
        let bad = KerasLayer(name: "x", className: "InputLayer", config: ["shape": [0, 3]], entry: [:], calls: [])
        #expect(throws: ImportError.self) { try KerasImporter.inputShape(bad, file: "m.h5", size: nil) }
    }

    @Test func malformedConfigsAreErrors() {
        for json in ["", "[]", "{\"class_name\": \"Sequential\"}", "{\"class_name\": \"Bert\"}",
                     "{\"class_name\": \"Functional\", \"config\": {\"layers\": [], \"input_layers\": [], \"output_layers\": []}}",
                     "{\"class_name\": \"Functional\", \"config\": {\"layers\": [{\"class_name\": \"Dense\", \"name\": \"d\", \"inbound_nodes\": [[[1, 2]]]}]}}"] {
            #expect(throws: ImportError.self, "\(json)") { try KerasModelConfig.parse(json, file: "m.h5") }
        }
    }
}
