import Foundation
import MLToolCore
import MLToolEngine
import Testing
@testable import MLToolImport

/// Keras 1-D networks, 2-D resampling, the activations Keras 3 names and Lambda layers that are only an activation
/// (fixtures by make_oned.py with Keras 3.15 / JAX and tf_keras 2.21 / TensorFlow 2.21 on real waveforms and token
/// ids), and how their configs are refused.
@Suite struct KerasOneDTests {
    // Measured (release, 2-core CI machine, `mltool run` on the same inputs): largest difference / output range
    // Keras 3: 2.0e-7 (audio1d), 9.5e-8 (text1d), 1.4e-7 (resample2d), 2.0e-7 (lambdas); Keras 2: 6.8e-8, 1.3e-7,
    // 1.9e-7, 5.0e-8; free_length (a free number of steps, run at 101): 1.3e-7 (K3), 8.3e-8 (K2).
    // The bar is rtol 1e-4, atol 1e-5.
    @Test(arguments: ["k3_audio1d", "k3_text1d", "k3_resample2d", "k3_lambdas", "k3_free_length", "k2_audio1d", "k2_text1d",
                      "k2_resample2d", "k2_lambdas", "k2_free_length"], [Engine.Mode.fast, .reference])
    func matchesKeras(_ name: String, _ mode: Engine.Mode) throws {
        try KerasFixture.expectMatchesKeras(name, mode)
    }

    @Test(arguments: ["k3_lambda_scaled.h5", "k2_lambda_scaled.h5"])
    func lambdaThatIsNotOnlyAnActivationIsRefused(_ name: String) throws {
        do {
            _ = try KerasImporter.importModel(path: KerasFixture.path(name), options: ImportOptions())
            Issue.record("\(name) was imported")
        } catch let error as ImportError {
            #expect(error.description == "\(name): layer 'scaled_relu' (Lambda): refused: the layer carries "
                + "Python code that is not a known activation, and mltool never runs Python code")
            #expect(error.exitStatus.rawValue == 65)
        }
    }

    @Test func lambdasBecomeTheirActivation() throws {
        let model = try KerasImporter.importModel(path: KerasFixture.path("k3_lambdas.h5"), options: ImportOptions())
        let nodes = try #require(model.metadata.graph?.nodes)
        func op(_ name: String) -> Node? { nodes.first { $0.name == name } }
        #expect(op("swish")?.op == .swish)
        #expect(op("relu6")?.op == .clip && op("tf_relu6")?.op == .clip)
        #expect(op("gelu_tanh")?.op == .unary && op("gelu_tanh")?.attributes.mode == "geluTanh")
    }

    // MARK: - Marshalled lambdas

    /// base64(marshal.dumps((lambda x: tf.nn.relu6(x)).__code__)) under CPython 3.8, 3.10, 3.11, 3.12 and 3.13.
    static let relu6Lambdas = [
        "4wEAAAAAAAAAAAAAAAEAAAADAAAAQwAAAHMMAAAAdABqAaACfAChAVMAqQFOqQPaAnRm2gJubtoFcmVsdTapAdoBeKkAcggAAADaCDxzdHJpbmc+2gg8bGFtYmRhPgQAAADzAAAAAA==",
        "4wEAAAAAAAAAAAAAAAEAAAADAAAAQwAAAPMMAAAAdABqAaACfAChAVMAqQFOqQPaAnRm2gJubtoFcmVsdTapAdoBeKkAcgkAAADaCDxzdHJpbmc+2gg8bGFtYmRhPgQAAADzAgAAAAwA",
        "4wEAAAAAAAAAAAAAAAMAAAADAAAA80AAAACXAHQAAAAAAAAAAAAAAGoBAAAAAAAAAACgAgAAAAAAAAAAAAAAAAAAAAAAAAAAfACmAQAAqwEAAAAAAAAAAFMAqQFOqQPaAnRm2gJubtoFcmVsdTapAdoBeHMBAAAAIPoIPHN0cmluZz76CDxsYW1iZGE+cgoAAAAEAAAAcxIAAACAAK0CrAWvC6oLsEGpDqwOgADzAAAAAA==",
        "4wEAAAAAAAAAAAAAAAMAAAADAAAA80AAAACXAHQAAAAAAAAAAABqAgAAAAAAAAAAAAAAAAAAAAAAAGoFAAAAAAAAAAAAAAAAAAAAAAAAfACrAQAAAAAAAFMAqQFOqQPaAnRm2gJubtoFcmVsdTapAdoBeHMBAAAAIPoIPHN0cmluZz76CDxsYW1iZGE+cgoAAAAEAAAAcxIAAACAAKwCrwWpBa8LqQuwQasOgADzAAAAAA==",
        "4wEAAAAAAAAAAAAAAAMAAAADAAAA80AAAACVAFsAAAAAAAAAAABSAgAAAAAAAAAAAAAAAAAAAAAAAFIFAAAAAAAAAAAAAAAAAAAAAAAAVQA1AQAAAAAAACQAqQFOqQPaAnRm2gJubtoFcmVsdTapAdoBeHMBAAAAINoIPHN0cmluZz7aCDxsYW1iZGE+cgoAAAAEAAAAcxAAAACAAKwCrwWpBa8LqQuwQawO8wAAAAA=",
    ]

    /// Other lambdas under 3.8 and 3.11: `tf.nn.relu6(x) * 2`, `tf.nn.relu6(y)`, `lambda x, y=1: tf.nn.relu6(x)`.
    static let otherLambdas = [
        "4wEAAAAAAAAAAAAAAAEAAAADAAAAQwAAAHMQAAAAdABqAaACfAChAWQBFABTACkCTukCAAAAqQPaAnRm2gJubtoFcmVsdTapAdoBeKkAcggAAADaCDxzdHJpbmc+2gg8bGFtYmRhPgYAAADzAAAAAA==",
        "4wEAAAAAAAAAAAAAAAEAAAADAAAAQwAAAHMMAAAAdABqAaACdAOhAVMAqQFOKQTaAnRm2gJubtoFcmVsdTbaAXmpAdoBeKkAcggAAADaCDxzdHJpbmc+2gg8bGFtYmRhPgcAAADzAAAAAA==",
        "4wIAAAAAAAAAAAAAAAIAAAADAAAAQwAAAHMMAAAAdABqAaACfAChAVMAqQFOqQPaAnRm2gJubtoFcmVsdTYpAtoBeNoBeakAcggAAADaCDxzdHJpbmc+2gg8bGFtYmRhPggAAADzAAAAAA==",
        "4wEAAAAAAAAAAAAAAAMAAAADAAAA80YAAACXAHQAAAAAAAAAAAAAAGoBAAAAAAAAAACgAgAAAAAAAAAAAAAAAAAAAAAAAAAAfACmAQAAqwEAAAAAAAAAAGQBegUAAFMAKQJO6QIAAACpA9oCdGbaAm5u2gVyZWx1NqkB2gF4cwEAAAAg+gg8c3RyaW5nPvoIPGxhbWJkYT5yCgAAAAYAAABzFwAAAIAApRKkFacbohuoUaEepB6wIdEhM4AA8wAAAAA=",
        "4wEAAAAAAAAAAAAAAAMAAAADAAAA80oAAACXAHQAAAAAAAAAAAAAAGoBAAAAAAAAAACgAgAAAAAAAAAAAAAAAAAAAAAAAAAAdAYAAAAAAAAAAAAApgEAAKsBAAAAAAAAAABTAKkBTikE2gJ0ZtoCbm7aBXJlbHU22gF5qQHaAXhzAQAAACD6CDxzdHJpbmc++gg8bGFtYmRhPnIKAAAABwAAAHMSAAAAgAClQqRFp0uiS7UBoU6kToAA8wAAAAA=",
        "4wIAAAAAAAAAAAAAAAMAAAADAAAA80AAAACXAHQAAAAAAAAAAAAAAGoBAAAAAAAAAACgAgAAAAAAAAAAAAAAAAAAAAAAAAAAfACmAQAAqwEAAAAAAAAAAFMAqQFOqQPaAnRm2gJubtoFcmVsdTYpAtoBeNoBeXMCAAAAICD6CDxzdHJpbmc++gg8bGFtYmRhPnIKAAAACAAAAHMSAAAAgAClcqR1p3uie7AxoX6kfoAA8wAAAAA=",
    ]

    @Test func marshalledLambdasOfEveryPythonAreRecognised() throws {
        for code in Self.relu6Lambdas {
            #expect(KerasLambda.lambdaPath(base64: code) == "tf.nn.relu6")
            let keras2: [String: Any] = ["function": [code, NSNull(), NSNull()], "function_type": "lambda", "arguments": [:]]
            guard case .fused(let a)? = KerasLambda.activation(keras2, kerasMajor: 2) else {
                Issue.record("not relu6")
                continue
            }
            #expect(a == .relu6)
        }
        for code in Self.otherLambdas { #expect(KerasLambda.lambdaPath(base64: code) == nil) }
    }

    /// Every truncation and every single-byte change of a recognised lambda is handled without a trap: a prefix is
    /// never recognised (the whole object must be read); a changed byte is recognised only as the same call (a
    /// change in the file name or line table is allowed).
    @Test func damagedMarshalDataNeverTraps() throws {
        for code in Self.relu6Lambdas {
            let bytes = [UInt8](try #require(Data(base64Encoded: code)))
            for n in 0..<bytes.count {
                #expect(KerasLambda.lambdaPath(base64: Data(bytes[..<n]).base64EncodedString()) == nil)
            }
            for i in bytes.indices {
                var b = bytes
                b[i] ^= 0xff
                if let path = KerasLambda.lambdaPath(base64: Data(b).base64EncodedString()) {
                    #expect(path == "tf.nn.relu6", "byte \(i)")
                }
            }
        }
    }

    @Test func namedFunctionsAndExtras() {
        let swish: [String: Any] = ["function": ["module": "builtins", "class_name": "function", "config": "silu",
                                                 "registered_name": "function"], "arguments": [:]]
        #expect(KerasLambda.activation(swish, kerasMajor: 3) != nil)
        var withArguments = swish
        withArguments["arguments"] = ["alpha": 2]
        #expect(KerasLambda.activation(withArguments, kerasMajor: 3) == nil)
        let custom: [String: Any] = ["function": ["module": "my_package", "class_name": "function", "config": "relu"]]
        #expect(KerasLambda.activation(custom, kerasMajor: 3) == nil)
        let keras2: [String: Any] = ["function": "relu6", "function_type": "function", "module": "keras.activations"]
        #expect(KerasLambda.activation(keras2, kerasMajor: 2) != nil)
        #expect(KerasLambda.activation(path: "tf.nn.gelu", kerasMajor: 2).map { "\($0)" } == "unary(MLToolCore.UnaryFunction.gelu, alpha: 0.0, beta: 0.0)")
        #expect(KerasLambda.activation(path: "keras.ops.gelu", kerasMajor: 3).map { "\($0)" } == "unary(MLToolCore.UnaryFunction.geluTanh, alpha: 0.0, beta: 0.0)")
        #expect(KerasLambda.activation(path: "os.system", kerasMajor: 3) == nil)
        #expect(KerasLambda.activation(path: "tf.nn.dropout", kerasMajor: 3) == nil)
    }

    // MARK: - Hostile configs

    @Test func hostileOneDConfigsNameTheLayerAndField() {
        let conv: [String: Any] = ["filters": 2, "kernel_size": [3], "strides": [1]]
        func message(_ change: [String: Any], _ className: String = "Conv1D", input: [Int] = [-1, 16, 4]) -> String? {
            KerasFixture.message { try KerasFixture.convert(className, conv.merging(change) { $1 }, input: input) }
        }
        #expect(message(["strides": [-2]]) == "m.h5: layer 'l' strides: expected a size from 1 to 65536, found [-2]")
        #expect(message(["kernel_size": [40]])
            == "m.h5: layer 'l' kernel_size: expected a kernel of at most the input's 16 steps with 'valid' padding, found 40")
        #expect(message(["kernel_size": [6], "dilation_rate": [4]])
            == "m.h5: layer 'l' kernel_size: expected a kernel of at most the input's 16 steps with 'valid' padding, "
            + "found 6 dilated by 4 (21 steps)")
        // 16 steps, exactly the input: the geometry passes and the (absent) weights come next.
        #expect(message(["kernel_size": [6], "dilation_rate": [3]])
            == "m.h5: layer 'l' kernel: expected a weight in model_weights, found no weights")
        #expect(message(["dilation_rate": [1 << 30]])
            == "m.h5: layer 'l' dilation_rate: expected a size from 1 to 65536, found [1073741824]")
        #expect(message(["dilation_rate": [60000], "padding": "same"])
            == "m.h5: layer 'l' dilation_rate: expected a dilated kernel of at most 65536 steps, found kernel 3 × dilation 60000")
        #expect(message(["pool_size": [0]], "MaxPooling1D") == "m.h5: layer 'l' pool_size: expected a size from 1 to 65536, found [0]")
        #expect(message(["cropping": [10, 6]], "Cropping1D")
            == "m.h5: layer 'l' cropping: expected fewer than the 16 steps of axis 1, found 10 + 6")
        #expect(message(["padding": [-1, 2]], "ZeroPadding1D")
            == "m.h5: layer 'l' padding: expected an int or (begin, end), each ≥ 0, found [-1, 2]")
        #expect(message(["size": 1 << 20], "UpSampling1D") == "m.h5: layer 'l' size: expected a size from 1 to 65536, found 1048576")
        #expect(message([:], "Conv1D", input: [-1, 4, 4, 4])
            == "m.h5: layer 'l' input: expected a rank-3 (N, steps, channels) tensor, found [?,4,4,4]")
        #expect(message(["cropping": [[0, 9], [0, 0]]], "Cropping2D", input: [-1, 8, 8, 3])
            == "m.h5: layer 'l' cropping: expected fewer than the 8 steps of axis 1, found 0 + 9")
    }

    /// The same through whole files (make_oned.py's hostile_1d_*.h5): exit 65, the layer and field named.
    @Test(arguments: [
        ("strides", "layer 'conv' strides: expected a size from 1 to 65536, found [-2]"),
        ("kernel", "layer 'conv' kernel_size: expected a kernel of at most the input's 16 steps with 'valid' padding, found 40"),
        ("dilation", "layer 'sep' dilation_rate: expected a size from 1 to 65536, found [1073741824]"),
        ("crop", "layer 'crop' cropping: expected fewer than the 16 steps of axis 1, found 10 + 6"),
    ])
    func hostileFilesAreRefused(_ c: (String, String)) throws {
        let name = "hostile_1d_\(c.0).h5"
        do {
            _ = try KerasImporter.importModel(path: KerasFixture.path(name), options: ImportOptions())
            Issue.record("\(name) was imported")
        } catch let error as ImportError {
            #expect(error.description == "\(name): \(c.1)")
            #expect(error.exitStatus.rawValue == 65)
        }
    }

    @Test func unsupportedVariantsAreListed() {
        func problem(_ className: String, _ config: [String: Any]) -> String? {
            KerasLayerConverters.problem(KerasLayer(name: "l", className: className, config: config, entry: [:], calls: []),
                                         kerasMajor: 3)
        }
        #expect(problem("UpSampling2D", ["interpolation": "bicubic"]) == "UpSampling2D (interpolation bicubic)")
        #expect(problem("Conv1D", ["padding": "full"]) == "Conv1D (padding full)")
        #expect(problem("Embedding", ["mask_zero": true]) == "Embedding (mask_zero)")
        #expect(problem("Conv1D", ["data_format": "channels_first"]) == nil)
        #expect(problem("ZeroPadding2D", ["data_format": "channels_first"]) == nil)
        #expect(problem("ZeroPadding1D", ["data_format": "channels_first"]) == "ZeroPadding1D (data_format channels_first)")
        #expect(problem("Dense", ["activation": "hard_shrink"]) == "activation 'hard_shrink'")
    }
}
