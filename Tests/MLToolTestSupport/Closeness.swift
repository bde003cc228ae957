import MLToolCore

/// Why two arrays are not close, with the worst element: what `assertClose` reports.
public struct Mismatch: Sendable, Equatable, CustomStringConvertible {
    public enum Reason: Sendable, Equatable {
        /// The tensors' shapes differ (nothing else is compared).
        case shape(actual: [Int], expected: [Int])
        /// The arrays' element counts differ (nothing else is compared).
        case count(actual: Int, expected: Int)
        /// A NaN or an infinity, in either array: never close, even when both hold the same one.
        case nonFinite
        /// Every element finite, but some |actual − expected| > atol + rtol·|expected|.
        case tolerance
    }

    public var reason: Reason
    /// The worst element: the first non-finite one, or the one furthest past its allowance (nil for shape/count).
    public var index: Int?
    /// The worst element's position in the shape, when a shape was given (row-major).
    public var position: [Int]?
    public var actual: Double?
    public var expected: Double?
    /// atol + rtol·|expected| at the worst element.
    public var allowed: Double?
    /// How many elements fail (non-finite or past their allowance).
    public var failing: Int
    public var count: Int

    public var description: String {
        switch reason {
        case let .shape(a, e): return "shape \(a), expected \(e)"
        case let .count(a, e): return "\(a) elements, expected \(e)"
        case .nonFinite, .tolerance:
            let at = position.map { "\($0)" } ?? "[\(index ?? -1)]"
            let a = actual.map { "\($0)" } ?? "?", e = expected.map { "\($0)" } ?? "?"
            let what = reason == .nonFinite ? "not finite" : "differs by \(abs((actual ?? 0) - (expected ?? 0))), allowed \(allowed ?? 0)"
            return "\(failing) of \(count) elements fail; worst \(at): \(a) vs expected \(e) (\(what))"
        }
    }
}

/// The one definition of "close" in the tests: same count (and shape), every element finite in both arrays, and
/// |actual − expected| ≤ atol + rtol·|expected| elementwise (numpy's `isclose`, without its NaN or infinity escapes).
/// The comparison is written so that a NaN can never pass it: `!(difference <= allowed)`.
public enum Closeness {
    /// nil when close; otherwise the first reason and the worst element. Compared in Double.
    public static func mismatch<A: BinaryFloatingPoint, E: BinaryFloatingPoint>(
        _ actual: [A], _ expected: [E], rtol: Double, atol: Double, shape: [Int]? = nil
    ) -> Mismatch? {
        guard actual.count == expected.count else {
            return Mismatch(reason: .count(actual: actual.count, expected: expected.count), failing: 0,
                            count: actual.count)
        }
        var firstNonFinite: Int?, worst: Int?, worstExcess = 0.0, failing = 0
        for i in actual.indices {
            let a = Double(actual[i]), e = Double(expected[i])
            guard a.isFinite, e.isFinite else {
                failing += 1
                if firstNonFinite == nil { firstNonFinite = i }
                continue
            }
            let difference = abs(a - e), allowed = atol + rtol * abs(e)
            if !(difference <= allowed) {
                failing += 1
                let excess = difference - allowed
                if worst == nil || excess > worstExcess { worst = i; worstExcess = excess }
            }
        }
        guard let at = firstNonFinite ?? worst else { return nil }
        let e = Double(expected[at])
        return Mismatch(reason: firstNonFinite != nil ? .nonFinite : .tolerance, index: at,
                        position: shape.map { position(of: at, in: $0) }, actual: Double(actual[at]), expected: e,
                        allowed: atol + rtol * abs(e), failing: failing, count: actual.count)
    }

    /// The largest |actual − expected| / (atol + rtol·|expected|): at most 1 exactly when `mismatch` finds them close
    /// (infinity when the counts differ or any element is not finite). For printing a measured error beside its
    /// bound; tests assert through `assertClose`, never on this number.
    public static func ratio<A: BinaryFloatingPoint, E: BinaryFloatingPoint>(
        _ actual: [A], _ expected: [E], rtol: Double = 0, atol: Double
    ) -> Double {
        guard actual.count == expected.count else { return .infinity }
        var largest = 0.0
        for (x, y) in zip(actual, expected) {
            let a = Double(x), e = Double(y)
            guard a.isFinite, e.isFinite else { return .infinity }
            largest = Swift.max(largest, abs(a - e) / (atol + rtol * abs(e)))
        }
        return largest
    }

    /// Tensors: the shapes must be equal, then the elements as above (the worst one reported by position).
    public static func mismatch(_ actual: Tensor, _ expected: Tensor, rtol: Double, atol: Double) -> Mismatch? {
        guard actual.shape == expected.shape else {
            return Mismatch(reason: .shape(actual: actual.shape, expected: expected.shape), failing: 0,
                            count: actual.data.count)
        }
        return mismatch(actual.data, expected.data, rtol: rtol, atol: atol, shape: actual.shape)
    }

    /// Row-major position of flat index `i` in `shape` (the flat index alone when the shape does not hold it).
    static func position(of i: Int, in shape: [Int]) -> [Int] {
        guard !shape.isEmpty, shape.allSatisfy({ $0 > 0 }), i < shape.reduce(1, *) else { return [i] }
        var rest = i, out = [Int](repeating: 0, count: shape.count)
        for axis in stride(from: shape.count - 1, through: 0, by: -1) {
            out[axis] = rest % shape[axis]
            rest /= shape[axis]
        }
        return out
    }
}
