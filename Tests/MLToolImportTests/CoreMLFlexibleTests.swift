import Foundation
import MLToolCore
import MLToolEngine
import MLToolTestSupport
import Testing
@testable import MLToolImport

/// Core ML models with flexible input sizes and the ML Program ops real converted models use
/// (Tests/Fixtures/coreml/make_flexible_fixtures.py: torch 2.15 + coremltools 9.0): one import runs at every size
/// the file allows and matches torch there; a size outside them is refused naming the input, dimension and range.
@Suite struct CoreMLFlexibleTests {
    struct BlockCase: Decodable { let models: [String]; let input: String; let lengths: [Int]; let range: [Int]; let features: Int; let outputs: Int }
    struct DecoderCase: Decodable { let models: [String]; let input: String; let sizes: [Int]; let scale: Float; let channels: Int }
    struct OpsCase: Decodable { let models: [String]; let input: String; let shape: [Int]; let outputs: Int }
    struct Manifest: Decodable { let torch: String; let coremltools: String; let block: BlockCase; let decoder: DecoderCase; let ops: OpsCase }

    static func manifest() throws -> Manifest {
        try JSONDecoder().decode(Manifest.self, from: Data(contentsOf: URL(fileURLWithPath: CoreMLFixtures.path("manifest_flexible.json"))))
    }

    /// The bound: 1e-4 of the output's range (the largest |value| torch gives); the measured error is printed.
    /// Measured on the 2-core AVX2 machine (December 2026): at most 2.4e-7 of the range for the block (both formats,
    /// fast and reference kernels, every length), 1.3e-7 for the decoder (both formats, every size), 1.1e-7 for ops.
    static func bound(_ expected: Tensor, _ got: Tensor, _ what: String) -> Double {
        let range = Double(expected.data.map(abs).max() ?? 1)
        print("CoreMLFlexibleTests: \(what): max error \(Closeness.ratio(got.data, expected.data, atol: range)) of the output range")
        return 1e-4 * range
    }

    static func output(_ engine: Engine, _ model: Model, _ x: Tensor) throws -> Tensor {
        let graph = try #require(model.metadata.graph)
        return try #require(try engine.run([graph.inputs[0].name: x], outputs: [graph.outputs[0]])[graph.outputs[0]])
    }

    /// The transformer-ish block (layer_norm, matmul of computed tensors, gelu, reduce_*, stack, slice_by_index,
    /// gather, pow, erf, select, clip; the NeuralNetwork's reduce, batchedMatmul with transposeB, gelu, stack, slice,
    /// gather, erf, greaterThan, whereBroadcastable layers) at lengths 8 (the default), 3 and 20 from one import: torch's outputs within
    /// 1e-4 of their range, with the fast and the reference kernels.
    @Test(arguments: ["block.mlpackage", "block.mlmodel"])
    func blockRunsAtEveryLengthFromOneImport(model name: String) throws {
        let c = try Self.manifest().block
        #expect(c.models.contains(name))
        let model = try CoreMLImporter.importModel(path: CoreMLFixtures.path(name))
        let input = try #require(model.metadata.graph?.inputs.first)
        // The batch is free too (the graph never mixes it with other axes), without a name or bounds.
        #expect(input.name == c.input && input.shape == [-1, -1, c.features], "\(input)")
        #expect(input.dimensionNames == ["", "dim1", ""] && input.dimensionRanges == [[0, -1], c.range, [0, -1]], "\(input)")
        for mode in [Engine.Mode.fast, .reference] {
            let engine = try Engine(model: model, threads: 1, mode: mode)
            for n in c.lengths {
                let x = try CoreMLFixtures.floats("block.L\(n).in.f32", shape: [1, n, c.features])
                let expected = try CoreMLFixtures.floats("block.L\(n).out.f32", shape: [1, n, c.outputs])
                let got = try Self.output(engine, model, x)
                assertClose(got, expected, atol: Self.bound(expected, got, "\(name) L=\(n) \(mode)"), "\(name) L=\(n) \(mode)")
            }
        }
    }

    /// Lengths outside 2…32 are refused before anything runs, naming the input, the dimension and the range.
    @Test(arguments: ["block.mlpackage", "block.mlmodel"])
    func aLengthOutsideTheRangeIsRefused(model name: String) throws {
        let model = try CoreMLImporter.importModel(path: CoreMLFixtures.path(name))
        let engine = try Engine(model: model, threads: 1)
        for n in [1, 33] {
            let x = Tensor(shape: [1, n, 16], data: [Float](repeating: 0.5, count: n * 16))
            #expect(throws: EngineError.inputValue(name: "x", expected: "a size the source allows", actual: "dimension 1 (dim1) of \(n), allowed 2…32")) {
                try Self.output(engine, model, x)
            }
        }
    }

    /// The conv_transpose / upsample decoder (ML Program; deconvolution, bilinear upsample and crop layers in the
    /// NeuralNetwork) on an image of enumerated sizes: preprocessing at the default 48×48,
    /// the spatial dimensions free, and torch's outputs at 32, 48 and 64 from one import; 40×40 is not enumerated.
    @Test(arguments: ["decoder.mlpackage", "decoder.mlmodel"])
    func decoderRunsAtEveryEnumeratedSize(model name: String) throws {
        let c = try Self.manifest().decoder
        #expect(c.models.contains(name))
        let model = try CoreMLImporter.importModel(path: CoreMLFixtures.path(name))
        let prep = try #require(model.metadata.image)
        #expect(prep.height == c.sizes[0] && prep.width == c.sizes[0] && abs(prep.scale - c.scale) < 1e-9, "\(prep)")
        let input = try #require(model.metadata.graph?.inputs.first)
        #expect(input.shape == [-1, -1, -1, 3] && input.dimensionNames == ["", "height", "width", ""], "\(input)")
        #expect(input.enumeratedShapes == [[-1, 32, 32, -1], [-1, 48, 48, -1], [-1, 64, 64, -1]], "\(input)")
        let engine = try Engine(model: model, threads: 1)
        for s in c.sizes {
            let pixels = try Data(contentsOf: URL(fileURLWithPath: CoreMLFixtures.path("decoder.\(s).in.u8")))
            #expect(pixels.count == 3 * s * s)
            // uint8 (1, 3, s, s) → the IR's (1, s, s, 3), through the recorded scale.
            let x = Tensor(shape: [1, s, s, 3], data: (0..<(3 * s * s)).map { i in
                let (p, ch) = (i / 3, i % 3)
                return Float(pixels[ch * s * s + p]) * prep.scale
            })
            let expected = try CoreMLFixtures.floats("decoder.\(s).out.f32", shape: [1, s, s, c.channels])
            let got = try Self.output(engine, model, x)
            assertClose(got, expected, atol: Self.bound(expected, got, "\(name) \(s)×\(s)"), "\(name) \(s)×\(s)")
        }
        let x = Tensor(shape: [1, 40, 40, 3], data: [Float](repeating: 0.5, count: 40 * 40 * 3))
        #expect(throws: EngineError.inputValue(name: "image", expected: "a size the source allows",
                                               actual: "shape [1, 40, 40, 3], allowed one of [*, 32, 32, *], [*, 48, 48, *], [*, 64, 64, *]")) {
            try Self.output(engine, model, x)
        }
    }

    /// The other ops (instance_norm, aligned-corner bilinear upsampling, reflect pad, split, matmul of two computed
    /// tensors with a transpose (coremltools' einsum), tile, gather_along_axis, reduce_max / reduce_l2_norm over two
    /// axes, reduce_argmax, tanh gelu, cast; in the NeuralNetwork: instance-normalizing batchnorm, bilinear upsample,
    /// padding, splitND, batchedMatmul, tile, gatherAlongAxis, the reduce layers, argMax, gelu) on the chelsea photo:
    /// torch's 1,200 outputs within 1e-4 of their range.
    @Test(arguments: ["ops.mlpackage", "ops.mlmodel"])
    func otherOpsMatchTorch(model name: String) throws {
        let c = try Self.manifest().ops
        #expect(c.models.contains(name))
        let model = try CoreMLImporter.importModel(path: CoreMLFixtures.path(name))
        let engine = try Engine(model: model, threads: 1)
        // (1, 3, 16, 16) NCHW in the file, the IR's (1, 16, 16, 3).
        let nchw = try CoreMLFixtures.floats("ops.in.f32", shape: c.shape)
        let (h, w) = (c.shape[2], c.shape[3])
        let x = Tensor(shape: [1, h, w, 3], data: (0..<(3 * h * w)).map { i in nchw.data[(i % 3) * h * w + i / 3] })
        let expected = try CoreMLFixtures.floats("ops.out.f32", shape: [c.outputs])
        let got = try Self.output(engine, model, x)
        assertClose(got.data, expected.data, atol: Self.bound(expected, got, name), name)
    }
}
