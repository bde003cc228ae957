import MLToolCore

extension Reference {
    /// The k largest (or smallest) values along the axis, sorted, ties broken by the lower index; or their indices.
    static func topK(_ s: Step, _ x: UnsafePointer<Float>, _ xs: [Int], _ y: UnsafeMutablePointer<Float>, _ ys: [Int]) {
        let ax = (s.axis ?? -1) < 0 ? (s.axis ?? -1) + xs.count : s.axis ?? 0
        let outer = xs[..<ax].reduce(1, *), n = xs[ax], inner = xs[(ax + 1)...].reduce(1, *)
        let k = ys[ax]
        for o in 0..<outer {
            for i in 0..<inner {
                let at = { (j: Int) in (o * n + j) * inner + i }
                // Comparator: the better value first; NaN ranks above every number when largest (as numpy's sort
                // puts NaN last, and TopK takes from the end), equal values by index.
                let order = (0..<n).sorted { p, q in
                    let a = x[at(p)], b = x[at(q)]
                    if a == b || (a.isNaN && b.isNaN) { return p < q }
                    if s.largest { return a.isNaN || (!b.isNaN && a > b) }
                    return !a.isNaN && (b.isNaN || a < b)
                }
                for j in 0..<k {
                    y[(o * k + j) * inner + i] = s.indicesOut ? Float(order[j]) : x[at(order[j])]
                }
            }
        }
    }
}
