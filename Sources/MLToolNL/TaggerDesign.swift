/// Tagged sentences as the perceptron reads them: for every word the rows of its features (keys looked up in one
/// `FeatureIndex`), for every sentence its word range, and the gold tag numbers.
struct TaggerDesign: Sendable {
    /// Rows of word w: `rows[rowOffsets[w]..<rowOffsets[w + 1]]`.
    var rowOffsets: [Int]
    var rows: [Int32]
    /// Words of sentence s: `sentenceOffsets[s]..<sentenceOffsets[s + 1]`.
    var sentenceOffsets: [Int]
    /// The gold tag of every word (−1 for a tag the model does not know).
    var gold: [Int32]

    var sentenceCount: Int { sentenceOffsets.count - 1 }
    var wordCount: Int { gold.count }
}
