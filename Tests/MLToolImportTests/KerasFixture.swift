import Foundation
import MLToolCore
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

    /// Every element within rtol·|expected| + atol, with the worst element named on failure.
    static func expectClose(_ got: Tensor, _ want: Tensor, rtol: Float = 1e-4, atol: Float = 1e-5,
                            _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(got.shape == want.shape, "\(what): shape", sourceLocation: sourceLocation)
        guard got.shape == want.shape else { return }
        var worst = (index: -1, excess: Float(0))
        for i in 0..<got.count {
            let excess = abs(got.data[i] - want.data[i]) - (atol + rtol * abs(want.data[i]))
            if !(excess <= 0), worst.index < 0 || !(excess <= worst.excess) { worst = (i, excess) }
        }
        #expect(worst.index < 0, "\(what): element \(worst.index) is \(worst.index >= 0 ? got.data[worst.index] : 0), expected \(worst.index >= 0 ? want.data[worst.index] : 0)", sourceLocation: sourceLocation)
    }

    /// The message of the error `body` throws (nil when it does not throw).
    static func message<T>(_ body: () throws -> T) -> String? {
        do { _ = try body(); return nil } catch { return "\(error)" }
    }
}
