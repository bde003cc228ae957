import Foundation
import MLToolCore
import MLToolTestSupport
import Testing

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

    /// The message of the error `body` throws (nil when it does not throw).
    static func message<T>(_ body: () throws -> T) -> String? {
        do { _ = try body(); return nil } catch { return "\(error)" }
    }
}
