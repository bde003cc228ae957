/// A word tagger's settings (task "wordTagger"): its feature set, its tokenizer, the entity scheme of its tags,
/// and the names of its tensors (docs/FORMAT.md, section 4.3).
public struct TaggerConfig: Codable, Equatable, Sendable {
    /// The feature templates the weights belong to; "mltool-tagger-1" is the only set.
    public var features: String
    public var tokenizer: WordTokenizerConfig
    /// "bio" or "bioes" when the tags mark entities (B-PER, I-PER, O …); nil otherwise.
    public var scheme: String?
    /// i64 [F]: feature keys, strictly increasing as unsigned numbers, none zero.
    public var keysTensor: String
    /// [F, T] (T = number of labels): the weight of each feature for each tag; any floating or quantized dtype.
    public var weightsTensor: String
    /// f32 [T + 2, T]: tag-to-tag scores, then the start row, then the end row.
    public var transitionsTensor: String
    /// i64 [W]: lower-case word hashes, strictly increasing as unsigned numbers, none zero.
    public var lexiconKeysTensor: String
    /// i32 [W, 2]: per word, the bit mask of the tags it was seen with and its cluster path (0: none).
    public var lexiconValuesTensor: String

    public init(features: String = "mltool-tagger-1", tokenizer: WordTokenizerConfig = WordTokenizerConfig(),
                scheme: String? = nil, keysTensor: String = "tagger.keys", weightsTensor: String = "tagger.weights",
                transitionsTensor: String = "tagger.transitions", lexiconKeysTensor: String = "tagger.lexicon.keys",
                lexiconValuesTensor: String = "tagger.lexicon.values") {
        self.features = features; self.tokenizer = tokenizer; self.scheme = scheme; self.keysTensor = keysTensor
        self.weightsTensor = weightsTensor; self.transitionsTensor = transitionsTensor
        self.lexiconKeysTensor = lexiconKeysTensor; self.lexiconValuesTensor = lexiconValuesTensor
    }
}
