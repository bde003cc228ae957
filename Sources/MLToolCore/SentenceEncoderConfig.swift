/// How text becomes a sentence encoder's inputs (docs/FORMAT.md, "Sentence encoders"): the WordPiece tokenizer,
/// and the longest sequence the position table holds. The graph takes `input_ids` and `attention_mask` (batch,
/// sequence) and gives `embedding` (batch, hidden), already pooled and L2-normalised.
public struct SentenceEncoderConfig: Codable, Equatable, Sendable {
    public var tokenizer: WordPieceTokenizer
    /// The position table's length: no text is given more ids than this (nor than the tokenizer's `maxLength`).
    public var maxPositions: Int
    /// The length of an embedding (the encoder's hidden size).
    public var dimension: Int

    public init(tokenizer: WordPieceTokenizer, maxPositions: Int, dimension: Int) {
        self.tokenizer = tokenizer; self.maxPositions = maxPositions; self.dimension = dimension
    }
}
