import Foundation
import MLToolCore
import MLToolTestSupport
import Testing

/// `assertClose` must fail on what a `max(worst, |a − b|)` loop lets through (Swift's `max` drops a NaN; ∞ − ∞ is
/// NaN), on a count or shape mismatch, and must name the worst element. Each failing case runs inside
/// `withKnownIssue`, which itself fails when the expected issue is not recorded: these tests fail if assertClose
/// passes any of them.
@Suite struct AssertCloseTests {
    /// The text of the issue `body` records (each case must record exactly one).
    func expectOneIssue(containing parts: [String], sourceLocation: SourceLocation = #_sourceLocation,
                        _ body: () -> Bool) {
        final class Count: @unchecked Sendable {
            let lock = NSLock()
            var value = 0
            func add() { lock.lock(); value += 1; lock.unlock() }
        }
        var returned: Bool?
        let recorded = Count()
        withKnownIssue(sourceLocation: sourceLocation) {
            returned = body()
        } matching: { issue in
            recorded.add()
            let text = issue.comments.map(\.rawValue).joined(separator: " ")
            return parts.allSatisfy { text.contains($0) }
        }
        #expect(returned == false, "assertClose returned true for values it should reject", sourceLocation: sourceLocation)
        #expect(recorded.value == 1, "\(recorded.value) issues recorded", sourceLocation: sourceLocation)
    }

    @Test func closeValuesPassAndRecordNothing() {
        #expect(assertClose([Float(1), 2, -3], [1.00001, 2.0, -3.0], rtol: 1e-4, atol: 0, "relative"))
        #expect(assertClose([Float(0), 1e-7], [Float(1e-6), 0], atol: 1e-6, "absolute"))
        #expect(assertClose([Float](), [Double](), atol: 0, "empty"))
        #expect(assertClose(Tensor(shape: [2, 1], data: [1, 2]), Tensor(shape: [2, 1], data: [1, 2]), atol: 0))
        #expect(Closeness.mismatch([Float(5)], [Float(4)], rtol: 0, atol: 1) == nil, "the bound itself is close")
    }

    @Test func failsOnNaN() {
        expectOneIssue(containing: ["nan vs expected 2.0", "not finite", "1 of 3"]) {
            assertClose([Float(1), .nan, 3], [Float(1), 2, 3], atol: 1e9, "NaN actual")
        }
        expectOneIssue(containing: ["not finite"]) { assertClose([Float(1)], [Double.nan], atol: 1e9, "NaN expected") }
        // NaN in both: equal bit patterns, still not close.
        expectOneIssue(containing: ["not finite"]) { assertClose([Float.nan], [Float.nan], atol: 0, "NaN in both") }
        // The NaN is reported even when a finite element is further off.
        expectOneIssue(containing: ["[2]", "2 of 4", "not finite"]) {
            assertClose([Float(0), 100, .nan, 0], [Float(0), 0, 0, 0], atol: 1, "NaN behind a worse value")
        }
        // A NaN pre-filled output that a kernel never wrote (the pattern of the gradient tests).
        expectOneIssue(containing: ["3 of 3"]) {
            assertClose([Float](repeating: .nan, count: 3), [0.1, 0.2, 0.3], rtol: 1, atol: 1, "unwritten output")
        }
    }

    @Test func failsOnInfinity() {
        expectOneIssue(containing: ["inf vs expected 1.0", "not finite"]) {
            assertClose([Float.infinity], [Float(1)], atol: .infinity, "+∞ with an infinite allowance")
        }
        expectOneIssue(containing: ["not finite"]) { assertClose([Float.infinity], [Float.infinity], atol: 0, "∞ in both") }
        expectOneIssue(containing: ["not finite"]) { assertClose([-Float.infinity], [Double(-1e300)], atol: 0, "−∞") }
        expectOneIssue(containing: ["not finite"]) { assertClose([Double(3)], [Float.infinity], rtol: 1, atol: 1, "∞ expected") }
    }

    @Test func failsOnShapeOrCountMismatch() {
        expectOneIssue(containing: ["shape [2, 3], expected [3, 2]"]) {
            assertClose(Tensor(shape: [2, 3], data: Array(repeating: 0, count: 6)),
                        Tensor(shape: [3, 2], data: Array(repeating: 0, count: 6)), atol: 1, "transposed")
        }
        expectOneIssue(containing: ["3 elements, expected 4"]) {
            assertClose([Float(1), 2, 3], [Float(1), 2, 3, 4], atol: 1, "short")
        }
        // A count mismatch that `zip` would hide even when the common prefix is equal.
        expectOneIssue(containing: ["0 elements, expected 1"]) { assertClose([Float](), [Float(0)], atol: 1, "empty") }
    }

    @Test func reportsTheWorstElementByPosition() {
        expectOneIssue(containing: ["tolerance", "2 of 6", "worst [1, 0]: 0.5 vs expected 0.0", "allowed 0.1"]) {
            assertClose(Tensor(shape: [2, 3], data: [0, 0.2, 0, 0.5, 0, 0]), Tensor(zeros: [2, 3]), atol: 0.1,
                        "tolerance")
        }
        let m = Closeness.mismatch([Float(1), 2.5, 2], [Double(1), 2, 3], rtol: 0.1, atol: 0)
        #expect(m?.reason == .tolerance && m?.index == 2 && m?.failing == 2 && m?.allowed == 0.30000000000000004,
                "\(String(describing: m))")
    }
}
