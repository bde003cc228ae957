import MLToolCore
import Testing

/// Expects `actual` and `expected` to be close (`Closeness`: same count, all finite, |a − e| ≤ atol + rtol·|e|);
/// otherwise records one issue naming `what`, the reason, how many elements fail and the worst one.
/// Returns whether they were close.
@discardableResult
public func assertClose<A: BinaryFloatingPoint, E: BinaryFloatingPoint>(
    _ actual: [A], _ expected: [E], rtol: Double = 0, atol: Double, _ what: @autoclosure () -> String = "",
    sourceLocation: SourceLocation = #_sourceLocation
) -> Bool {
    record(Closeness.mismatch(actual, expected, rtol: rtol, atol: atol), rtol: rtol, atol: atol, what(), sourceLocation)
}

/// Tensors: equal shapes first, then the elements as above (the worst one reported by position).
@discardableResult
public func assertClose(
    _ actual: Tensor, _ expected: Tensor, rtol: Double = 0, atol: Double, _ what: @autoclosure () -> String = "",
    sourceLocation: SourceLocation = #_sourceLocation
) -> Bool {
    record(Closeness.mismatch(actual, expected, rtol: rtol, atol: atol), rtol: rtol, atol: atol, what(), sourceLocation)
}

private func record(_ m: Mismatch?, rtol: Double, atol: Double, _ what: String, _ at: SourceLocation) -> Bool {
    guard let m else { return true }
    Issue.record("\(what.isEmpty ? "" : what + ": ")not close (rtol \(rtol), atol \(atol)): \(m)", sourceLocation: at)
    return false
}
