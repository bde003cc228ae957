/// The settings of a `WordTokenizer`, stored in a tagger model: the rule set's name and the lists it uses, all
/// lower case (see `WordTokenizer` for how each is applied).
public struct WordTokenizerConfig: Codable, Equatable, Sendable {
    /// The rule set (MLToolData's `WordTokenizer`); "mltool-words-1" is the only one.
    public var rules: String
    /// Split "-" between letters ("well-known" → "well" "-" "known").
    public var splitHyphens: Bool
    /// With `splitHyphens`: a hyphen after one of these stays inside the word ("anti" keeps "anti-war").
    public var hyphenPrefixes: [String]
    /// Endings split off as their own token ("n't", "'s", "'ll").
    public var clitics: [String]
    /// Words cut into pieces of these lengths in Unicode scalars ("cannot": [3, 3]).
    public var splits: [String: [Int]]
    /// Tokens kept whole although they hold punctuation ("e.g.", "mr.", "u.s.").
    public var keep: [String]

    public init(rules: String = "mltool-words-1", splitHyphens: Bool = false, hyphenPrefixes: [String] = [],
                clitics: [String] = [], splits: [String: [Int]] = [:], keep: [String] = []) {
        self.rules = rules; self.splitHyphens = splitHyphens; self.hyphenPrefixes = hyphenPrefixes
        self.clitics = clitics; self.splits = splits; self.keep = keep
    }
}
