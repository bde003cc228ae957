/// The sizes a graph input with flexible dimensions accepts: the bounds and enumerated shapes a source (Core ML's
/// shape ranges and enumerated shapes) records beside the free dimensions (−1) of `shape`.
extension GraphInput {
    /// Why `actual` (a shape of `shape`'s rank) is outside the recorded bounds, naming the dimension and what is
    /// allowed; nil when it is within them (or none are recorded).
    public func sizeError(_ actual: [Int]) -> String? {
        if let ranges = dimensionRanges, ranges.count == actual.count {
            for (axis, (size, range)) in zip(actual, ranges).enumerated() where range.count == 2 {
                let (low, high) = (range[0], range[1])
                guard size < low || (high >= 0 && size > high) else { continue }
                return "dimension \(axis)\(dimensionLabel(axis)) of \(size), allowed \(low)…\(high < 0 ? "∞" : String(high))"
            }
        }
        if let shapes = enumeratedShapes, !shapes.isEmpty,
           !shapes.contains(where: { s in s.count == actual.count && zip(s, actual).allSatisfy { $0 < 0 || $0 == $1 } }) {
            let listed = shapes.map { "[" + $0.map { $0 < 0 ? "*" : String($0) }.joined(separator: ", ") + "]" }
            return "shape \(actual), allowed one of \(listed.joined(separator: ", "))"
        }
        return nil
    }

    private func dimensionLabel(_ axis: Int) -> String {
        guard let names = dimensionNames, axis < names.count, !names[axis].isEmpty else { return "" }
        return " (\(names[axis]))"
    }
}
