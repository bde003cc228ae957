import Foundation
import MLToolCore
import MLToolEngine
import Testing
@testable import MLToolImport

/// Keras 2-D networks written channels_first, and Conv2DTranspose (fixtures by make_cf2d.py with Keras 3.15 / JAX on
/// the CPU): they import, take their image as (N, H, W, C) and give Keras's outputs.
@Suite struct KerasChannelsFirstTests {
    static let fixtures = ["k3_cf_classifier", "k3_cf_separable", "k3_cf_branches", "k3_cf_global", "k3_cf_deconv"]

    /// (N, C, H, W) → (N, H, W, C).
    static func nhwc(_ t: Tensor) -> Tensor {
        let (n, c, h, w) = (t.shape[0], t.shape[1], t.shape[2], t.shape[3])
        var out = [Float](repeating: 0, count: t.data.count)
        for i in 0..<n { for y in 0..<h { for x in 0..<w { for k in 0..<c {
            out[((i * h + y) * w + x) * c + k] = t.data[((i * c + k) * h + y) * w + x]
        } } } }
        return Tensor(shape: [n, h, w, c], data: out)
    }

    // Measured (release, 2-core machine, `mltool run` on the stored (N, C, H, W) inputs): largest difference / output
    // range 1.8e-7 (classifier), 6.7e-7 (separable), 2.2e-7 (branches), 7.0e-8 (global), same argmax on every row;
    // 1.2e-7 (deconv: the whole 3266-value map of five Conv2DTranspose layers).
    // The bar is the Keras tests' rtol 1e-4, atol 1e-5.
    @Test(arguments: fixtures, [Engine.Mode.fast, .reference])
    func matchesKeras(_ name: String, _ mode: Engine.Mode) throws {
        let model = try KerasImporter.importModel(path: KerasFixture.path(name + ".h5"), options: ImportOptions())
        let (input, expected) = try KerasFixture.io(name)
        let graph = try #require(model.metadata.graph)
        let image = try #require(graph.inputs.first)
        // The image is taken as (N, H, W, C); `mltool run` takes Keras's (N, C, H, W) and transposes it.
        #expect(image.shape == [-1, input.shape[2], input.shape[3], input.shape[1]])
        #expect(graph.sourceLayout == "nchw")
        let engine = try Engine(model: model, threads: 1, mode: mode)
        let output = try #require(graph.outputs.first)
        let got = try #require(try engine.run([image.name: Self.nhwc(input)])[output])
        KerasFixture.expectClose(got, expected, "\(name) (\(mode))")
    }

    /// Conv2DTranspose channels_last ('same' stride 2, 'valid' stride 3 over a kernel of 2, dilation). Measured:
    /// largest difference 1.4e-7 of the output range (`mltool run`, the whole 864-value map).
    @Test(arguments: [Engine.Mode.fast, .reference])
    func channelsLastConvTransposeMatchesKeras(_ mode: Engine.Mode) throws {
        try KerasFixture.expectMatchesKeras("k3_deconv_last", mode)
    }

    /// A rank-4 output stays in Keras's (N, C, H, W) order, so `mltool run` does not transpose: the layout stays
    /// "nhwc" and the image is given as (N, H, W, C). Measured: equal to Keras's output bit for bit (`mltool run`).
    @Test(arguments: [Engine.Mode.fast, .reference])
    func mapOutputStaysInKerasOrder(_ mode: Engine.Mode) throws {
        let model = try KerasImporter.importModel(path: KerasFixture.path("k3_cf_dense_map.h5"), options: ImportOptions())
        let (input, expected) = try KerasFixture.io("k3_cf_dense_map")
        let graph = try #require(model.metadata.graph)
        #expect(graph.inputs == [GraphInput(name: "image", shape: [-1, 6, 5, 2])])
        #expect(graph.sourceLayout == "nhwc")
        let got = try #require(try Engine(model: model, threads: 1, mode: mode).run(["image": Self.nhwc(input)])["conv2"])
        #expect(got.shape == [2, 3, 12, 10])
        KerasFixture.expectClose(got, expected, "k3_cf_dense_map (\(mode))")
    }

    /// Between two channels_first layers the transpose back to (N, C, H, W) and the one to (N, H, W, C) cancel: the
    /// classifier's chain conv → bn → pool → conv → pad → pool runs with no transpose but the one before Flatten.
    @Test func transposesCancelBetweenChannelsFirstLayers() throws {
        let model = try KerasImporter.importModel(path: KerasFixture.path("k3_cf_classifier.h5"), options: ImportOptions())
        let graph = try #require(try GraphPasses.optimize(model).metadata.graph)
        let transposes = graph.nodes.filter { $0.op == .transpose }
        #expect(transposes.count == 1, "\(transposes.map(\.name))")
        #expect(graph.nodes.first { $0.op == .flatten }?.inputs == transposes.map { $0.outputs[0] })
    }

    @Test func inputSizeAndImageOptionsApplyToHeightAndWidth() throws {
        let path = KerasFixture.path("k3_cf_classifier.h5")
        let labels = ["a", "b", "c", "d", "e"]
        let image = ImagePreprocessing(height: 16, width: 14, scale: 1.0 / 255)
        let model = try KerasImporter.importModel(path: path, options: ImportOptions(image: image, labels: labels,
                                                                                      inputSize: (height: 16, width: 14)))
        #expect(model.metadata.task == .imageClassifier)
        #expect(model.metadata.graph?.inputs == [GraphInput(name: "image", shape: [-1, 16, 14, 3])])
        let message = KerasFixture.message {
            try KerasImporter.importModel(path: path, options: ImportOptions(inputSize: (height: 14, width: 16)))
        }
        #expect(message == "k3_cf_classifier.h5: input 'image' size: expected 16×14 (fixed by the model), found 14×16")
    }

    @Test func flattenChannelsFirstMovesChannelsLast() throws {
        let b = try KerasFixture.convert("Flatten", ["data_format": "channels_first"], input: [-1, 2, 3, 4])
        #expect(b.nodes.map(\.op) == [.transpose, .flatten])
        #expect(b.nodes.first?.attributes.perm == [0, 2, 3, 1])
        #expect(b.shape("l") == [-1, 24])
        let plain = try KerasFixture.convert("Flatten", ["data_format": "channels_last"], input: [-1, 2, 3, 4])
        #expect(plain.nodes.map(\.op) == [.flatten])
    }

    /// A softmax activation of a channels_first conv is over Keras's last axis (W), after the transpose back.
    @Test func softmaxActivationIsOverTheLastAxisOfKerasOrder() throws {
        let weights = [KerasLayerWeights.Entry(name: "l/kernel", shape: [1, 1, 2, 3], data: [Float](repeating: 0.5, count: 6))]
        let b = try KerasFixture.convert("Conv2D", ["data_format": "channels_first", "filters": 3, "kernel_size": [1, 1],
                                                    "use_bias": false, "activation": "softmax"],
                                         input: [-1, 2, 5, 7], weights: weights)
        #expect(b.nodes.map(\.op) == [.transpose, .conv, .transpose, .softmax])
        #expect(b.nodes.last?.attributes.axis == 3 && b.shape("l") == [-1, 3, 5, 7])
    }

    @Test func hostileConvTransposeConfigsAreRefusedNamingTheLayer() {
        for (key, value) in [("strides", [-2, 2]), ("dilation_rate", [1 << 30, 1]), ("output_padding", [-1, 0]),
                             ("kernel_size", [0, 3])] {
            var config: [String: Any] = ["filters": 2, "kernel_size": [3, 3]]
            config[key] = value
            let message = KerasFixture.message { try KerasFixture.convert("Conv2DTranspose", config, input: [-1, 4, 4, 3]) }
            #expect(message?.hasPrefix("m.h5: layer 'l': expected sizes from 1 to 65536") == true, "\(key): \(message ?? "nil")")
        }
        let layer = KerasLayer(name: "l", className: "Conv2DTranspose", config: ["padding": "causal"], entry: [:], calls: [])
        #expect(KerasLayerConverters.problem(layer, kerasMajor: 3) == "Conv2DTranspose (padding causal)")
    }

    @Test func batchNormOnAxisOneOfARank3Tensor() throws {
        let stats = [KerasLayerWeights.Entry(name: "l/moving_mean", shape: [4], data: [1, 2, 3, 4]),
                     .init(name: "l/moving_variance", shape: [4], data: [1, 1, 1, 1])]
        let b = try KerasFixture.convert("BatchNormalization", ["axis": [1], "center": false, "scale": false],
                                         input: [-1, 4, 9], weights: stats)
        #expect(b.nodes.map(\.op) == [.transpose, .batchNorm, .transpose])
        #expect(b.nodes.map(\.attributes.perm) == [[0, 2, 1], nil, [0, 2, 1]])
        #expect(b.shape("l") == [-1, 4, 9])
    }
}
