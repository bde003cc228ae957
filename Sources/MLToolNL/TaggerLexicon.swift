/// Per lower-case word: the tags it was seen with in training (a bit mask) and its word cluster. Looked up by the
/// hash of the lower-case form; unknown words get neither. With `namesInMasks` (feature set "mltool-tagger-2") a
/// mask's bits above 15 are the word's gazetteer bits (`TaggerGazetteer`), given to the word apart from its tags.
struct TaggerLexicon: Sendable {
    /// Lower-case word hashes, sorted ascending (row r of `masks` and `clusters`).
    let keys: [UInt64]
    let masks: [UInt32]
    let clusters: [UInt32]
    let namesInMasks: Bool
    /// Feature set "mltool-tagger-3": the context templates 46–50 fire too.
    let context: Bool
    private let index: FeatureIndex

    init(keys: [UInt64], masks: [UInt32], clusters: [UInt32], namesInMasks: Bool = false, context: Bool = false) {
        self.keys = keys; self.masks = masks; self.clusters = clusters; self.namesInMasks = namesInMasks
        self.context = context
        index = keys.withUnsafeBufferPointer { FeatureIndex(sorted: $0) }
    }

    static let empty = TaggerLexicon(keys: [], masks: [], clusters: [])

    /// Fills in `word`'s tag mask and cluster.
    @inline(__always) func annotate(_ word: inout TaggerWord) {
        let r = index.row(word.lower)
        guard r >= 0 else { return }
        let m = masks[Int(r)]
        if namesInMasks {
            word.tagMask = m & 0xFFFF
            word.names = UInt16(truncatingIfNeeded: m >> TaggerGazetteer.firstBit)
        } else {
            word.tagMask = m
        }
        word.cluster = clusters[Int(r)]
    }
}
