extension EvaluationReport {
    /// The `limit` classes most involved in errors (off-diagonal counts in their row plus their column), in label
    /// order; all classes when there are no more than `limit`. A large matrix is drawn for these only.
    public func classesMostConfused(limit: Int) -> [Int] {
        let k = confusion.count
        guard k > limit else { return Array(0..<k) }
        var errors = [Int](repeating: 0, count: k)
        for i in 0..<k {
            for j in 0..<k where i != j {
                errors[i] += confusion[i][j]
                errors[j] += confusion[i][j]
            }
        }
        let top = (0..<k).sorted { errors[$0] != errors[$1] ? errors[$0] > errors[$1] : $0 < $1 }.prefix(max(0, limit))
        return top.sorted()
    }

    /// The `limit` classes with the lowest F1 (ties: more support first), lowest first; all classes in label order
    /// when there are no more than `limit`.
    public func classesWorstF1(limit: Int) -> [Int] {
        let k = perClass.count
        guard k > limit else { return Array(0..<k) }
        let order = (0..<k).sorted {
            let a = perClass[$0], b = perClass[$1]
            return a.f1 != b.f1 ? a.f1 < b.f1 : a.support != b.support ? a.support > b.support : $0 < $1
        }
        return Array(order.prefix(max(0, limit)))
    }
}
