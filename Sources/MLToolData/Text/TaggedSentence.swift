/// One sentence of word-tagging data: its words and one tag per word.
public struct TaggedSentence: Sendable, Equatable {
    /// The words (CoNLL-U's syntactic words: a multiword token such as "don't" appears as "do", "n't").
    public var tokens: [String]
    /// One tag per word.
    public var tags: [String]
    /// Where the sentence starts: its first line (line formats) or its 1-based position in the array (JSON).
    public var line: Int
    /// The raw sentence text when the data gives it (CoNLL-U's `# text =` comment).
    public var text: String?
    /// CoNLL-U multiword tokens: the surface form and the words it covers (0-based, half-open).
    public var multiwordTokens: [MultiwordToken]

    public init(tokens: [String], tags: [String], line: Int = 0, text: String? = nil,
                multiwordTokens: [MultiwordToken] = []) {
        self.tokens = tokens; self.tags = tags; self.line = line; self.text = text
        self.multiwordTokens = multiwordTokens
    }
}

/// A CoNLL-U multiword token (an id range such as `3-4`): one surface form written as several words.
public struct MultiwordToken: Sendable, Equatable {
    public var form: String
    /// The words it stands for, as 0-based indices into `TaggedSentence.tokens`.
    public var words: Range<Int>

    public init(form: String, words: Range<Int>) { self.form = form; self.words = words }
}
