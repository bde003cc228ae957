import Foundation
import MLToolCore
import Testing
@testable import MLToolImport

/// What the Keras importer refuses or rejects, each with its exact message and exit status.
@Suite struct KerasRefusalTests {
    func importError(_ name: String) throws -> ImportError {
        do {
            _ = try KerasImporter.importModel(path: KerasFixture.path(name), options: ImportOptions())
        } catch let error as ImportError {
            return error
        }
        Issue.record("\(name) was imported")
        throw CancellationError()
    }

    @Test(arguments: ["k2_lambda.h5", "k3_lambda.h5"])
    func lambdaLayerIsRefusedByName(_ name: String) throws {
        let error = try importError(name)
        #expect(error.description
            == "\(name): layer 'double_it' (Lambda): refused: the layer carries Python code that is not a known activation, "
            + "and mltool never runs Python code")
        #expect(error.exitStatus == .dataError)
        #expect(error.exitStatus.rawValue == 65)
    }

    @Test func customObjectFromAPackageIsRefused() throws {
        let error = try importError("custom_object.h5")
        #expect(error.description == "custom_object.h5: layer 'mystery' (MyDense): refused: it uses a custom object "
            + "from module 'my_package.layers', whose code mltool never runs")
    }

    @Test func codeInsideAConfigIsFound() throws {
        let registered = KerasLayer(name: "l", className: "Dense", config: [:],
                                    entry: ["class_name": "Dense", "config": ["kernel_initializer": [
                                        "class_name": "Init", "registered_name": "acme>Init", "config": [:]]]], calls: [])
        #expect(KerasFixture.message { try KerasSource.refuseCode([registered], file: "m.h5") }
            == "m.h5: layer 'l' (Dense): refused: it uses the custom object 'acme>Init', whose code mltool never runs")
        let lambda = KerasLayer(name: "a", className: "Activation", config: [:],
                                entry: ["config": ["activation": ["class_name": "__lambda__", "config": ["code": "..."]]]],
                                calls: [])
        #expect(KerasFixture.message { try KerasSource.refuseCode([lambda], file: "m.h5") }
            == "m.h5: layer 'a' (Activation): refused: it holds a serialized Python lambda, which mltool never runs")
        let keras = KerasLayer(name: "d", className: "Dense", config: [:],
                               entry: ["module": "keras.layers", "class_name": "Dense", "registered_name": NSNull(),
                                       "config": ["kernel_initializer": ["module": "keras.initializers", "class_name": "Zeros"]]],
                               calls: [])
        #expect(KerasFixture.message { try KerasSource.refuseCode([keras], file: "m.h5") } == nil)
    }

    @Test func externalLinkInModelWeightsIsRefused() throws {
        let error = try importError("k3_external_link.h5")
        #expect(error.description == "k3_external_link.h5: /model_weights/fc1: refused: HDF5 external link to "
            + "'elsewhere.h5' object '/fc1'; links out of the file are never followed")
        #expect(error.exitStatus.rawValue == 65)
    }

    @Test func unsupportedLayersAreListedAllAtOnce() throws {
        let error = try importError("unsupported.h5")
        let expected: [ImportError.Unsupported] = [
            .init(op: "Conv3D", count: 1, firstNodes: ["c3d"]),
            .init(op: "LSTM", count: 2, firstNodes: ["lstm_a", "lstm_b"]),
            .init(op: "ZeroPadding1D (data_format channels_first)", count: 1, firstNodes: ["cf"]),
            .init(op: "activation 'hard_shrink'", count: 1, firstNodes: ["shrink_fc"]),
            .init(op: "ReLU (max_value < 0)", count: 1, firstNodes: ["negative_cap"]),
        ]
        #expect(error == .unsupported(file: "unsupported.h5", ops: expected))
        #expect(error.description.hasPrefix("unsupported.h5: 6 nodes of 5 unsupported types:\n  Conv3D ×1 ('c3d')\n"))
    }

    @Test func fileThatIsNotHDF5() throws {
        let error = try importError("k3_mlp.json")
        #expect(error.description == "k3_mlp.json: not a valid model: not an HDF5 file")
        #expect(error.exitStatus.rawValue == 65)
    }

    @Test func missingFile() throws {
        let error = try importError("no_such_model.h5")
        #expect(error.description == "no_such_model.h5: cannot read: no such file")
        #expect(error.exitStatus == .noInput)
    }

    @Test func weightsOnlyFileSaysWhatIsMissing() throws {
        let error = try importError("hdf5_cases.h5")
        #expect(error.description == "hdf5_cases.h5: / attribute 'model_config': expected a full model saved with "
            + "model.save(), found no model config (a weights-only file?)")
    }

    /// Every truncation of a real model must throw a clean error, never crash or import.
    @Test func truncatedFilesThrow() throws {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: KerasFixture.path("k3_mobilenet.h5")))
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mltool-keras-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        var lengths = Array(stride(from: 0, to: bytes.count, by: max(1, bytes.count / 97)))
        lengths += [1, 7, 8, 512, 2048, bytes.count - 1]
        for length in lengths {
            let url = dir.appendingPathComponent("truncated.h5")
            try bytes.prefix(length).write(to: url)
            #expect(throws: ImportError.self, "prefix \(length)") {
                try KerasImporter.importModel(path: url.path, options: ImportOptions())
            }
        }
        let url = dir.appendingPathComponent("truncated.h5")
        try bytes.prefix(bytes.count / 2).write(to: url)
        let message = KerasFixture.message { try KerasImporter.importModel(path: url.path, options: ImportOptions()) }
        #expect(message?.hasPrefix("truncated.h5: ") == true)
    }

    /// Flipped bytes must never crash: each corrupt copy either imports or throws an `ImportError`.
    @Test func corruptedBytesNeverCrash() throws {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: KerasFixture.path("k3_mlp.h5")))
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mltool-keras-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        var rng = SplitMix64(seed: 7)
        for i in 0..<60 {
            var copy = [UInt8](bytes)
            for _ in 0..<8 {
                let at = Int(rng.next() % UInt64(copy.count))
                copy[at] ^= UInt8(truncatingIfNeeded: rng.next() | 1)
            }
            let url = dir.appendingPathComponent("corrupt\(i).h5")
            try Data(copy).write(to: url)
            do {
                _ = try KerasImporter.importModel(path: url.path, options: ImportOptions())
            } catch is ImportError {
            } catch {
                Issue.record("corrupt copy \(i): \(type(of: error)) \(error)")
            }
        }
    }
}
