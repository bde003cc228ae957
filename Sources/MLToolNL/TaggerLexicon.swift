/// Per lower-case word: the tags it was seen with in training (a bit mask) and its word cluster. Looked up by the
/// hash of the lower-case form; unknown words get neither.
struct TaggerLexicon: Sendable {
    /// Lower-case word hashes, sorted ascending (row r of `masks` and `clusters`).
    let keys: [UInt64]
    let masks: [UInt32]
    let clusters: [UInt32]
    private let index: FeatureIndex

    init(keys: [UInt64], masks: [UInt32], clusters: [UInt32]) {
        self.keys = keys; self.masks = masks; self.clusters = clusters
        index = keys.withUnsafeBufferPointer { FeatureIndex(sorted: $0) }
    }

    static let empty = TaggerLexicon(keys: [], masks: [], clusters: [])

    /// Fills in `word`'s tag mask and cluster.
    @inline(__always) func annotate(_ word: inout TaggerWord) {
        let r = index.row(word.lower)
        guard r >= 0 else { return }
        word.tagMask = masks[Int(r)]
        word.cluster = clusters[Int(r)]
    }
}
