import Foundation
import MLToolCore

/// Shared multiclass trees (docs/FORMAT.md 4.5): a multiclass forest's K trees per round differ only in their leaves,
/// so a file stores each round's tree once with a [L, K] table of leaf values.
extension TreeEnsemble {
    /// The stored form: G = T / K trees (their leaves 0), their category words, and each leaf's K values (row-major,
    /// leaves in node order). Nil unless this is a multiclass forest or tree whose every group of K trees has the same
    /// nodes, thresholds and category sets.
    struct SharedTrees: Equatable, Sendable {
        var treeStarts: [Int32] = [0], nodes: [Int32] = [], values: [Float] = [], categoryWords: [UInt32] = [], leaves: [Float] = []

        /// The form `scores` walks: each leaf's column 4 (0 in a file) holds its row in `leaves`.
        func forScoring() -> SharedTrees {
            var s = self, leaf: Int32 = 0
            for i in stride(from: 0, to: nodes.count, by: 5) where nodes[i] < 0 { s.nodes[i + 4] = leaf; leaf += 1 }
            return s
        }

        /// The stored form of `forScoring`'s: leaves' column 4 back to 0.
        func forFile() -> SharedTrees {
            var s = self
            for i in stride(from: 0, to: nodes.count, by: 5) where nodes[i] < 0 { s.nodes[i + 4] = 0 }
            return s
        }

        /// `scores`' tables over these arrays (and `rows`, row-major feature values).
        func withTables<R>(rows: [Float], categoryCounts: [Int32], _ body: (ScoringTables) -> R) -> R {
            rows.withUnsafeBufferPointer { rp in
                nodes.withUnsafeBufferPointer { np in
                    values.withUnsafeBufferPointer { vp in
                        categoryWords.withUnsafeBufferPointer { cp in
                            treeStarts.withUnsafeBufferPointer { sp in
                                categoryCounts.withUnsafeBufferPointer { cc in
                                    leaves.withUnsafeBufferPointer { lp in body(ScoringTables(rp, np, vp, cp, sp, cc, lp)) }
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    func sharedTrees() -> SharedTrees? {
        let k = scoreCount
        guard objective == .multiclass, learner == .forest || learner == .tree, treeCount > 0, treeCount % k == 0 else { return nil }
        if let compact { return compact.scoring.forFile() }
        var out = SharedTrees()
        for g in 0..<(treeCount / k) {
            let first = Int(treeStarts[g * k]), size = Int(treeStarts[g * k + 1]) - first
            for j in 1..<k where !sameShape(first, Int(treeStarts[g * k + j]), size: size, end: Int(treeStarts[g * k + j + 1])) { return nil }
            for i in first..<(first + size) {
                var row = Array(nodes[(i * 5)..<(i * 5 + 5)])
                if row[0] >= 0, row[3] & 2 != 0 {
                    let span = words(feature: Int(row[0])), offset = Int(row[4])
                    row[4] = Int32(out.categoryWords.count)
                    out.categoryWords += categoryWords[offset..<(offset + span)]
                }
                out.nodes += row
                out.values.append(row[0] >= 0 ? values[i] : 0)
                if row[0] < 0 { for j in 0..<k { out.leaves.append(values[Int(treeStarts[g * k + j]) + i - first]) } }
            }
            out.treeStarts.append(Int32(out.values.count))
        }
        return out
    }

    /// Refuses shared trees whose leaf table is not [leaves, K] (or whose node and value tables disagree).
    static func checkLeaves(_ s: SharedTrees, k: Int, file: String) throws {
        let leafCount = s.nodes.indices.filter { $0 % 5 == 0 && s.nodes[$0] < 0 }.count
        guard s.leaves.count == leafCount * k, s.values.count * 5 == s.nodes.count else {
            throw TabularError.invalidModel(file: file, what: "leaf values", expected: "\(leafCount) × \(k)", actual: "\(s.leaves.count) values")
        }
    }

    /// The T = G · K trees of shared trees (checked by `checkLeaves`, either form): tree g · K + k is stored tree g
    /// with its leaves' values from column k (and 0 in each leaf's column 4).
    static func expand(_ s: SharedTrees, k: Int) -> NodeTables {
        var t = NodeTables(categoryWords: s.categoryWords)
        var leaf = 0
        for g in 0..<(s.treeStarts.count - 1) {
            let first = Int(s.treeStarts[g]), end = Int(s.treeStarts[g + 1])
            var rows = Array(s.nodes[(first * 5)..<(end * 5)])
            for i in stride(from: 0, to: rows.count, by: 5) where rows[i] < 0 { rows[i + 4] = 0 }
            for j in 0..<k {
                var at = leaf
                t.nodes += rows
                for i in first..<end {
                    if s.nodes[i * 5] < 0 { t.values.append(s.leaves[at * k + j]); at += 1 } else { t.values.append(s.values[i]) }
                }
                t.treeStarts.append(Int32(t.values.count))
            }
            leaf += (first..<end).filter { s.nodes[$0 * 5] < 0 }.count
        }
        return t
    }

    /// Whether the tree at `other` (ending at `end`) has the nodes, thresholds and category sets of the `size` nodes
    /// at `first`.
    private func sameShape(_ first: Int, _ other: Int, size: Int, end: Int) -> Bool {
        guard end - other == size else { return false }
        for i in 0..<size {
            let a = (first + i) * 5, b = (other + i) * 5
            guard nodes[a..<(a + 4)] == nodes[b..<(b + 4)] else { return false }
            guard nodes[a] >= 0 else { continue }
            if nodes[a + 3] & 2 != 0 {
                let span = words(feature: Int(nodes[a]))
                guard categoryWords[Int(nodes[a + 4])..<(Int(nodes[a + 4]) + span)] == categoryWords[Int(nodes[b + 4])..<(Int(nodes[b + 4]) + span)] else {
                    return false
                }
            } else if values[first + i].bitPattern != values[other + i].bitPattern {
                return false
            }
        }
        return true
    }

    /// Keeps this multiclass forest as its shared trees alone, for `scores` and the file (nothing for other ensembles).
    mutating func shareTrees() {
        guard compact == nil, let s = sharedTrees() else { return }
        scoringTrees = s.forScoring()
    }

    /// Adds each shared tree's leaf values (K per leaf) to rows lo..<hi of `out`, in blocks of rows as `addTrees` does.
    /// Each leaf's column 4 holds its row in `t.leaves` (`forScoring`).
    static func addShared(_ t: ScoringTables, _ out: UnsafeMutablePointer<Float>, _ lo: Int, _ hi: Int, k: Int, width: Int) {
        let rows = t.rows.baseAddress!, nodes = t.nodes.baseAddress!, leaves = t.leaves.baseAddress!
        @inline(__always) func add(_ node: Int, _ r: Int) {
            let from = leaves + Int(nodes[node * 5 + 4]) * k, to = out + r * k
            for j in 0..<k { to[j] += from[j] }
        }
        for block in stride(from: lo, to: hi, by: 64) {
            let end = min(block + 64, hi)
            for tree in 0..<(t.starts.count - 1) {
                let start = Int(t.starts[tree])
                var r = block
                while r + 8 <= end {
                    let at = leafNodes8(start, rows + r * width, width, t)
                    for l in 0..<8 { add(at[l], r + l) }
                    r += 8
                }
                for r in r..<end { add(leafNode(start, rows + r * width, t.nodes, t.values, t.words, t.counts), r) }
            }
        }
    }

    private func words(feature f: Int) -> Int { ((features[f].categories?.count ?? 0) + 31) / 32 }
}

/// A multiclass forest held as shared trees, and its tables in full once something asks for them (made once, then
/// kept: an export reads them node by node).
final class CompactTrees: @unchecked Sendable {
    let scoring: TreeEnsemble.SharedTrees
    let k: Int
    private let lock = NSLock()
    private var made: TreeEnsemble.NodeTables?

    init(scoring: TreeEnsemble.SharedTrees, k: Int) { self.scoring = scoring; self.k = k }

    var expanded: TreeEnsemble.NodeTables {
        lock.withLock {
            if let made { return made }
            let t = TreeEnsemble.expand(scoring, k: k)
            made = t
            return t
        }
    }
}
