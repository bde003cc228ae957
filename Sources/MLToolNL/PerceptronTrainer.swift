/// The averaged structured perceptron (Collins 2002) over a first-order tag chain: decode each sentence with the
/// current weights (Viterbi), and where the best sequence differs from the gold one add the gold sequence's
/// features and subtract the predicted one's. The model is the average of the weights over every sentence seen.
///
/// Weights are integers (every update is ±1), so training is exact and the same on every machine; the average is
/// kept with Daumé's trick: alongside W, U accumulates c·Δ at step c, and the average after c steps is W − U / c.
struct PerceptronTrainer {
    let tagCount: Int
    let rowCount: Int
    /// rowCount × T, then (T + 2) × T transition scores (`SequenceDecoder`'s layout).
    private(set) var weights: [Int32]
    private(set) var transitions: [Int32]
    private var weightSums: [Int64]
    private var transitionSums: [Int64]
    /// Sentences seen so far, plus one.
    private(set) var step: Int64 = 1

    init(rows: Int, tags: Int) {
        tagCount = tags; rowCount = rows
        weights = [Int32](repeating: 0, count: rows * tags + 8)   // 8 spare values: `TaggerKernels.emissions`
        weightSums = [Int64](repeating: 0, count: rows * tags)
        transitions = [Int32](repeating: 0, count: (tags + 2) * tags)
        transitionSums = [Int64](repeating: 0, count: (tags + 2) * tags)
    }

    /// One pass over the sentences of `design` in `order`; returns how many words were tagged right before their
    /// sentence's update.
    mutating func epoch(_ design: TaggerDesign, order: [Int]) -> Int {
        let t = tagCount
        var longest = 1
        for s in 0..<design.sentenceCount {
            longest = max(longest, design.sentenceOffsets[s + 1] - design.sentenceOffsets[s])
        }
        let scores = UnsafeMutablePointer<Int32>.allocate(capacity: longest * t)
        let delta = UnsafeMutablePointer<Int32>.allocate(capacity: longest * t)
        let back = UnsafeMutablePointer<Int32>.allocate(capacity: longest * t)
        let predicted = UnsafeMutablePointer<Int32>.allocate(capacity: longest)
        defer { scores.deallocate(); delta.deallocate(); back.deallocate(); predicted.deallocate() }
        var correct = 0
        var c = step
        design.rows.withUnsafeBufferPointer { rows in
        design.rowOffsets.withUnsafeBufferPointer { offsets in
        design.gold.withUnsafeBufferPointer { gold in
        weights.withUnsafeMutableBufferPointer { w in
        weightSums.withUnsafeMutableBufferPointer { u in
        transitions.withUnsafeMutableBufferPointer { a in
        transitionSums.withUnsafeMutableBufferPointer { au in
            guard let w = w.baseAddress, let u = u.baseAddress, let a = a.baseAddress, let au = au.baseAddress,
                  let rows = rows.baseAddress, let gold = gold.baseAddress else { return }
            for s in order {
                let lo = design.sentenceOffsets[s], n = design.sentenceOffsets[s + 1] &- lo
                // Emission scores: the sum of each word's feature rows.
                for i in 0..<n {
                    let first = offsets[lo &+ i]
                    TaggerKernels.emissions(w, t: t, rows: rows + first, count: offsets[lo &+ i &+ 1] &- first,
                                            out: scores + i &* t)
                }
                SequenceDecoder.viterbi(emissions: scores, n: n, tags: t, transitions: a, scratch: delta, back: back,
                                        out: predicted)
                // Φ(gold) − Φ(predicted): emission rows where the tags differ, transitions where the pairs differ.
                var previousGold = t, previousPredicted = t   // row t: the start
                for i in 0..<n {
                    let g = Int(gold[lo &+ i]), p = Int(predicted[i])
                    if g == p {
                        correct &+= 1
                    } else {
                        for r in offsets[lo &+ i]..<offsets[lo &+ i &+ 1] {
                            let base = Int(rows[r]) &* t
                            if g >= 0 { w[base &+ g] &+= 1; u[base &+ g] &+= c }
                            w[base &+ p] &-= 1; u[base &+ p] &-= c
                        }
                    }
                    if g >= 0 && (g != p || previousGold != previousPredicted) {
                        let gi = previousGold &* t &+ g, pi = previousPredicted &* t &+ p
                        a[gi] &+= 1; au[gi] &+= c
                        a[pi] &-= 1; au[pi] &-= c
                    }
                    previousGold = g >= 0 ? g : previousPredicted
                    previousPredicted = p
                }
                let endRow = (t &+ 1) &* t
                if previousGold != previousPredicted {
                    a[endRow &+ previousGold] &+= 1; au[endRow &+ previousGold] &+= c
                    a[endRow &+ previousPredicted] &-= 1; au[endRow &+ previousPredicted] &-= c
                }
                c &+= 1
            }
        }}}}}}}
        step = c
        return correct
    }

    /// The averaged weights W − U / c as Float (computed in Double): feature rows, then transitions.
    func averaged() -> (weights: [Float], transitions: [Float]) {
        let c = Double(step)
        func average(_ w: [Int32], _ u: [Int64]) -> [Float] {
            var out = [Float](repeating: 0, count: w.count)
            for i in 0..<u.count where w[i] != 0 || u[i] != 0 {
                out[i] = Float(Double(w[i]) - Double(u[i]) / c)
            }
            return out
        }
        return (average(weights, weightSums), average(transitions, transitionSums))
    }
}
