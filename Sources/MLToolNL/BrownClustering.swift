import Foundation

/// Brown word clusters (Brown et al. 1992) from unlabelled sentences, by Liang's (2005) windowed algorithm: the
/// `clusters` most frequent words start as one cluster each; every further word (by falling frequency) enters as a
/// cluster of its own and the pair of clusters whose merge loses the least average mutual information between
/// neighbouring clusters is merged; at the end the remaining clusters are merged down to one, and each word's cluster
/// is its path in that merge tree (0 left, 1 right, from the root) as a bit path with a leading 1.
///
/// Marginals are the words' unigram counts (fixed, as in Liang's `wcluster`), so a word entering the window changes
/// only the losses of the pairs it has bigrams with, and a merge costs O(clusters²). Ties go to the lowest slot pair,
/// so the same sentences give the same paths on every machine.
public struct BrownClustering: Sendable {
    /// Active clusters (the window); the tree has this many leaves.
    public var clusters: Int
    /// Words seen fewer times get no cluster.
    public var minCount: Int

    public init(clusters: Int = 128, minCount: Int = 2) {
        self.clusters = clusters; self.minCount = minCount
    }

    /// Longest path kept (the lexicon's `UInt32` holds a leading 1 and 31 bits); deeper leaves share their prefix.
    static let maxDepth = 30

    /// Each clustered word (as given: callers lower-case) with its bit path (leading 1).
    public func paths(_ sentences: [[String]]) -> [String: UInt32] {
        let vocab = Vocabulary(sentences, minCount: minCount)
        guard vocab.words.count >= 2 else { return [:] }
        var state = State(vocab: vocab, slots: min(clusters, vocab.words.count) + 1)
        for w in 0..<vocab.words.count {
            state.add(word: w)
            if state.active.count > clusters { state.mergeBest(record: false) }
        }
        state.closeWindow()
        while state.active.count > 1 { state.mergeBest(record: true) }
        let leafPaths = state.treePaths()
        var out: [String: UInt32] = [:]
        for (w, word) in vocab.words.enumerated() {
            if let p = leafPaths[state.leafOf[w]] { out[word] = p }
        }
        return out
    }

    /// Words by falling count (ties by the word), and every word's neighbours with counts.
    struct Vocabulary {
        var words: [String] = []
        var counts: [Double] = []
        /// right[w]: (word id, count) of the words that follow w; left[w] the words that precede it.
        var right: [[(Int, Double)]] = []
        var left: [[(Int, Double)]] = []
        var total = 0.0

        init(_ sentences: [[String]], minCount: Int) {
            var count: [String: Int] = [:]
            for s in sentences { for w in s { count[w, default: 0] += 1 } }
            let kept = count.filter { $0.value >= minCount }.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
            words = kept.map(\.key)
            counts = kept.map { Double($0.value) }
            let id = Dictionary(uniqueKeysWithValues: words.enumerated().map { ($1, $0) })
            var pairs: [Int: Double] = [:]
            let v = words.count
            for s in sentences {
                var previous = -1
                for w in s {
                    let cur = id[w] ?? -1
                    if previous >= 0 && cur >= 0 { pairs[previous * v + cur, default: 0] += 1; total += 1 }
                    previous = cur
                }
            }
            right = Array(repeating: [], count: v)
            left = Array(repeating: [], count: v)
            for key in pairs.keys.sorted() {
                let a = key / v, b = key % v, c = pairs[key] ?? 0
                right[a].append((b, c)); left[b].append((a, c))
            }
            total = max(total, 1)
        }
    }
}

extension BrownClustering {
    /// The clusters in the window: bigram counts between slots, marginals, each slot's share of the mutual
    /// information and the loss of merging every pair of slots.
    struct State {
        let vocab: BrownClustering.Vocabulary
        let k: Int
        var n: [Double]
        var m: [Double]
        var s: [Double]
        var loss: [Double]
        var active: [Int] = []
        var free: [Int]
        var members: [[Int]]
        var slotOf: [Int]
        let bigrams: Double, unigrams: Double
        /// After the window closes: each slot's tree node, each word's leaf, and the tree (children of node c ≥ leaves).
        var node: [Int]
        var leafOf: [Int]
        var children: [(Int, Int)] = []
        var leaves = 0

        init(vocab: BrownClustering.Vocabulary, slots: Int) {
            self.vocab = vocab; k = slots
            n = Array(repeating: 0, count: slots * slots)
            m = Array(repeating: 0, count: slots); s = m; node = Array(repeating: -1, count: slots)
            loss = n
            free = Array((0..<slots).reversed())
            members = Array(repeating: [], count: slots)
            slotOf = Array(repeating: -1, count: vocab.words.count)
            leafOf = slotOf
            bigrams = vocab.total; unigrams = max(vocab.counts.reduce(0, +), 1)
        }

        /// One term of the mutual information: p(a, b) log p(a, b) / (p(a) p(b)).
        @inline(__always) func q(_ nab: Double, _ ma: Double, _ mb: Double) -> Double {
            guard nab > 0 else { return 0 }
            let p = nab / bigrams
            return p * Foundation.log(p * unigrams * unigrams / (ma * mb))
        }

        @inline(__always) func qs(_ a: Int, _ b: Int) -> Double { q(n[a * k + b], m[a], m[b]) }

        func share(_ a: Int) -> Double {
            var t = -qs(a, a)
            for x in active { t += qs(a, x) + qs(x, a) }
            return t
        }

        /// The loss of merging slots a and b, from scratch.
        func mergeLoss(_ a: Int, _ b: Int) -> Double {
            let mab = m[a] + m[b]
            var after = q(n[a * k + a] + n[a * k + b] + n[b * k + a] + n[b * k + b], mab, mab)
            for x in active where x != a && x != b {
                after += q(n[a * k + x] + n[b * k + x], mab, m[x]) + q(n[x * k + a] + n[x * k + b], m[x], mab)
            }
            return s[a] + s[b] - qs(a, b) - qs(b, a) - after
        }

        @inline(__always) func touches(_ i: Int, _ a: Int) -> Bool { n[i * k + a] != 0 || n[a * k + i] != 0 }

        /// Word w enters the window as a cluster of its own.
        mutating func add(word w: Int) {
            let c = free.removeLast()
            slotOf[w] = c; members[c] = [w]; m[c] = vocab.counts[w]
            for (v, count) in vocab.right[w] where v <= w { n[c * k + slotOf[v]] += count }
            for (v, count) in vocab.left[w] where v < w { n[slotOf[v] * k + c] += count }
            var d = [Double](repeating: 0, count: k)
            for x in active { d[x] = qs(x, c) + qs(c, x); s[x] += d[x] }
            for (ai, i) in active.enumerated() {
                let ti = touches(i, c)
                for j in active[(ai + 1)...] where ti || touches(j, c) {
                    let mij = m[i] + m[j]
                    let delta = d[i] + d[j] - q(n[i * k + c] + n[j * k + c], mij, m[c]) - q(n[c * k + i] + n[c * k + j], m[c], mij)
                    loss[min(i, j) * k + max(i, j)] += delta
                }
            }
            active.append(c)
            s[c] = share(c)
            for x in active where x != c { loss[min(x, c) * k + max(x, c)] = mergeLoss(x, c) }
        }

        /// Merges the pair of active slots with the least loss (ties: the lowest pair).
        mutating func mergeBest(record: Bool) {
            var best = (Double.infinity, 0, 0)
            let sorted = active.sorted()
            for (ai, i) in sorted.enumerated() {
                for j in sorted[(ai + 1)...] where loss[i * k + j] < best.0 { best = (loss[i * k + j], i, j) }
            }
            merge(best.1, best.2, record: record)
        }

        mutating func merge(_ a: Int, _ b: Int, record: Bool) {
            let mab = m[a] + m[b]
            var d = [Double](repeating: 0, count: k)
            let others = active.filter { $0 != a && $0 != b }
            for x in others where touches(x, a) || touches(x, b) {
                d[x] = q(n[x * k + a] + n[x * k + b], m[x], mab) + q(n[a * k + x] + n[b * k + x], mab, m[x])
                    - qs(x, a) - qs(a, x) - qs(x, b) - qs(b, x)
            }
            for (oi, i) in others.enumerated() {
                let ti = touches(i, a) || touches(i, b)
                for j in others[(oi + 1)...] where ti || touches(j, a) || touches(j, b) {
                    let mij = m[i] + m[j]
                    let ia = n[i * k + a] + n[j * k + a], ib = n[i * k + b] + n[j * k + b]
                    let ai = n[a * k + i] + n[a * k + j], bi = n[b * k + i] + n[b * k + j]
                    let change = q(ia + ib, mij, mab) + q(ai + bi, mab, mij) - q(ia, mij, m[a]) - q(ai, m[a], mij)
                        - q(ib, mij, m[b]) - q(bi, m[b], mij)
                    loss[min(i, j) * k + max(i, j)] += d[i] + d[j] - change
                }
            }
            for x in others { s[x] += d[x] }
            for x in active { n[a * k + x] += n[b * k + x] }
            for x in active where x != b { n[x * k + a] += n[x * k + b] }
            for x in 0..<k { n[b * k + x] = 0; n[x * k + b] = 0 }
            m[a] = mab; m[b] = 0
            for w in members[b] { slotOf[w] = a }
            members[a] += members[b]; members[b] = []
            active.removeAll { $0 == b }
            free.append(b)
            if record {
                children.append((node[a], node[b]))
                node[a] = leaves + children.count - 1
            }
            s[a] = share(a)
            for x in active where x != a { loss[min(x, a) * k + max(x, a)] = mergeLoss(x, a) }
        }

        /// Numbers the active slots as the tree's leaves (in slot order) and every word by its slot's leaf.
        mutating func closeWindow() {
            for (leaf, slot) in active.sorted().enumerated() {
                node[slot] = leaf
                for w in members[slot] { leafOf[w] = leaf }
            }
            leaves = active.count
        }

        /// Every leaf's path from the root (left 0, right 1; at most `maxDepth` bits) with a leading 1.
        func treePaths() -> [Int: UInt32] {
            var out: [Int: UInt32] = [:]
            guard let root = active.first.map({ node[$0] }) else { return out }
            var stack: [(Int, UInt32, Int)] = [(root, 1, 0)]
            while let (v, path, depth) = stack.popLast() {
                if v < leaves { out[v] = path; continue }
                let (l, r) = children[v - leaves]
                let deeper = depth < BrownClustering.maxDepth
                stack.append((l, deeper ? path << 1 : path, depth + (deeper ? 1 : 0)))
                stack.append((r, deeper ? path << 1 | 1 : path, depth + (deeper ? 1 : 0)))
            }
            return out
        }
    }
}
