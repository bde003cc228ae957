import Foundation
import MLToolData
import MLToolTestSupport
import Testing
@testable import MLToolNL

/// Brown clusters: the incremental merge losses against a recomputation, and the tree on a made-up language.
@Suite struct BrownClusteringTests {
    /// Every loss and mutual-information share the window keeps up to date equals its recomputation, through the
    /// adding and the final merges, on real sentences (EWT train's first 300).
    @Test func incrementalLossesEqualRecomputedOnes() throws {
        guard NLPaths.haveEWT else { return skip("datasets/ud-english-ewt missing: run datasets/ud-english-ewt.sh") }
        let sentences = try TaggedCorpus.load(NLPaths.ewt("en_ewt-ud-train.conllu")).sentences.prefix(300)
            .map { $0.tokens.map { $0.lowercased() } }
        let vocab = BrownClustering.Vocabulary(sentences, minCount: 2)
        var state = BrownClustering.State(vocab: vocab, slots: 17)
        var kept: [Double] = [], recomputed: [Double] = [], checks = 0
        func check() {
            let a = state.active.sorted()
            for (i, x) in a.enumerated() {
                kept.append(state.s[x]); recomputed.append(state.share(x))
                for y in a[(i + 1)...] {
                    kept.append(state.loss[x * state.k + y]); recomputed.append(state.mergeLoss(x, y)); checks += 1
                }
            }
        }
        for w in 0..<vocab.words.count {
            state.add(word: w)
            if state.active.count > 16 { check(); state.mergeBest(record: false) }
        }
        state.closeWindow()
        while state.active.count > 1 { check(); state.mergeBest(record: true) }
        // Measured: 4e-16 at most over the whole run.
        assertClose(kept, recomputed, atol: 1e-12, "incremental against recomputed shares and merge losses")
        #expect(checks > 10_000, "\(checks) pairs checked")
        #expect(vocab.words.count > 300)
    }

    /// Words used the same way end up under one node, away from words used differently; the same input gives the
    /// same paths.
    @Test func wordsWithTheSameNeighboursShareAPath() {
        var sentences: [[String]] = []
        for (i, subject) in ["cat", "dog", "bird", "fish"].enumerated() {
            for (j, verb) in ["runs", "sleeps", "eats"].enumerated() {
                for k in 0..<(1 + (i + j) % 3) { sentences.append(["the", subject, verb, k % 2 == 0 ? "today" : "now", "."]) }
            }
        }
        let paths = BrownClustering(clusters: 4, minCount: 1).paths(sentences)
        #expect(paths == BrownClustering(clusters: 4, minCount: 1).paths(sentences))
        func shared(_ a: String, _ b: String) -> Int {
            guard let x = paths[a], let y = paths[b] else { return -1 }
            let (dx, dy) = (31 - x.leadingZeroBitCount, 31 - y.leadingZeroBitCount)
            var n = 0
            while n < min(dx, dy) && (x >> UInt32(dx - n - 1)) & 1 == (y >> UInt32(dy - n - 1)) & 1 { n += 1 }
            return n
        }
        #expect(paths.count == 11)
        #expect(shared("cat", "dog") > shared("cat", "runs") && shared("runs", "eats") > shared("runs", "dog"),
                "\(paths.mapValues { String($0, radix: 2) })")
    }
}
