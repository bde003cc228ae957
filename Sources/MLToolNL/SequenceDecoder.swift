/// First-order Viterbi decoding: the tag sequence y maximising Σ_t E[t][y_t] + Σ_t A[y_{t−1}][y_t] (with
/// A[start][y_0] and A[y_{n−1}][end]). Ties go to the smaller tag index, so every machine decodes the same way.
///
/// Layouts: `emissions` is n × T row-major; `transitions` is (T + 2) × T: row p < T holds the scores from tag p to
/// each tag, row T the scores from the start, row T + 1 the score of ending on each tag.
enum SequenceDecoder {
    /// Writes the best tags of `n` words into `out`. `scratch` holds at least n × T scores and `back` n × T tags.
    static func viterbi<S: DecoderScore>(
        emissions e: UnsafePointer<S>, n: Int, tags t: Int, transitions a: UnsafePointer<S>,
        scratch delta: UnsafeMutablePointer<S>, back: UnsafeMutablePointer<Int32>, out: UnsafeMutablePointer<Int32>
    ) {
        guard n > 0, t > 0 else { return }
        let start = a + t &* t, end = a + (t &+ 1) &* t
        for y in 0..<t { delta[y] = start[y].adding(e[y]) }
        var i = 1
        while i < n {
            let previous = delta + (i &- 1) &* t, current = delta + i &* t
            let emit = e + i &* t, from = back + i &* t
            for y in 0..<t {
                var best = previous[0].adding(a[y])
                var arg: Int32 = 0
                var p = 1
                while p < t {
                    let s = previous[p].adding(a[p &* t &+ y])
                    if s > best { best = s; arg = Int32(truncatingIfNeeded: p) }
                    p &+= 1
                }
                current[y] = best.adding(emit[y])
                from[y] = arg
            }
            i &+= 1
        }
        let last = delta + (n &- 1) &* t
        var best = last[0].adding(end[0])
        var arg: Int32 = 0
        for y in 1..<t {
            let s = last[y].adding(end[y])
            if s > best { best = s; arg = Int32(truncatingIfNeeded: y) }
        }
        out[n &- 1] = arg
        var k = n &- 1
        while k > 0 {
            arg = back[k &* t &+ Int(arg)]
            out[k &- 1] = arg
            k &-= 1
        }
    }
}
