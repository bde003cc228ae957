import Foundation
import MLToolCore
import MLToolEngine
import MLToolTestSupport
import Testing
@testable import MLToolImport

/// The Keras fixtures of Tests/Fixtures/keras (written by make_fixtures.py with real Keras) and their expected values.
enum KerasFixture {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/keras")

    static func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// The input and Keras's own `model.predict` output stored beside a fixture.
    static func io(_ name: String) throws -> (input: Tensor, output: Tensor) {
        let data = try Data(contentsOf: directory.appendingPathComponent(name + ".json"))
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        func tensor(_ key: String) throws -> Tensor {
            let t = try #require(json[key] as? [String: Any])
            let shape = try #require(t["shape"] as? [NSNumber]).map(\.intValue)
            let values = try #require(t["data"] as? [NSNumber]).map(\.floatValue)
            try #require(shape.reduce(1, *) == values.count)
            return Tensor(shape: shape, data: values)
        }
        return (try tensor("input"), try tensor("output"))
    }

    /// `assertClose` at the Keras tests' tolerance: rtol 1e-4, atol 1e-5.
    static func expectClose(_ got: Tensor, _ want: Tensor, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        assertClose(got, want, rtol: 1e-4, atol: 1e-5, what, sourceLocation: sourceLocation)
    }

    /// Imports fixture `name`.h5, runs the engine in `mode` on its stored input and compares the first output with
    /// Keras's (`expectClose`).
    static func expectMatchesKeras(_ name: String, _ mode: Engine.Mode, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let model = try KerasImporter.importModel(path: path(name + ".h5"), options: ImportOptions())
        let (input, expected) = try io(name)
        let engine = try Engine(model: model, threads: 1, mode: mode)
        let inputName = try #require(model.metadata.graph?.inputs.first?.name)
        let outputName = try #require(model.metadata.graph?.outputs.first)
        let got = try #require(try engine.run([inputName: input])[outputName])
        expectClose(got, expected, "\(name) (\(mode))", sourceLocation: sourceLocation)
    }

    /// Runs one converter on a synthetic layer "l" whose input "x" is a graph input of `shape`.
    static func convert(_ className: String, _ config: [String: Any], input shape: [Int],
                        weights: [KerasLayerWeights.Entry] = []) throws -> KerasGraphBuilder {
        var b = KerasGraphBuilder(file: "m.h5", kerasMajor: 3, weights: ["l": KerasLayerWeights(entries: weights)],
                                  inputSize: nil)
        b.addInput("x", shape: shape)
        let layer = KerasLayer(name: "l", className: className, config: config, entry: [:], calls: [])
        let converter = try #require(KerasLayerConverters.table[className])
        _ = try converter.convert(&b, KerasCall(layer: layer, inputs: ["x"], output: "l", node: "l"))
        return b
    }

    /// The message of the error `body` throws (nil when it does not throw).
    static func message<T>(_ body: () throws -> T) -> String? {
        do { _ = try body(); return nil } catch { return "\(error)" }
    }
}
