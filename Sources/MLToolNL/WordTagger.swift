import MLToolCore
import MLToolData

/// A trained word tagger: a linear model over the features of `TaggerFeatures` with first-order tag transitions,
/// decoded by Viterbi. It carries its tokenizer, so it tags raw text as well as tokens.
///
///     let tagger = try WordTagger(model: model)          // a model file's contents (task "wordTagger")
///     tagger.tag(["Tim", "Cook", "visited", "Paris", "."])   // ["PROPN", "PROPN", "VERB", "PROPN", "PUNCT"]
///     tagger.tag(text: "Tim Cook visited Paris.")        // tokens with their character offsets and tags
public struct WordTagger: Sendable {
    /// Tag names, in the order of the weight columns.
    public let tags: [String]
    public let tokenizer: WordTokenizer
    /// Feature keys, sorted ascending; row r of `weights` belongs to `keys[r]`.
    let keys: [UInt64]
    /// keys.count × tags.count, then 8 spare values (`TaggerKernels.emissions` reads whole 8-lane blocks).
    let weights: [Float]
    /// (tags + 2) × tags (`SequenceDecoder`'s layout).
    let transitions: [Float]
    let lexicon: TaggerLexicon
    let index: FeatureIndex
    /// "bio" or "bioes" when the tags mark entities (`EntityMetrics.scheme`), else nil.
    public let scheme: String?

    init(tags: [String], tokenizer: WordTokenizer, keys: [UInt64], weights: [Float], transitions: [Float],
         lexicon: TaggerLexicon, scheme: String?) {
        self.tags = tags; self.tokenizer = tokenizer; self.keys = keys; self.weights = weights
        self.transitions = transitions; self.lexicon = lexicon; self.scheme = scheme
        index = keys.withUnsafeBufferPointer { FeatureIndex(sorted: $0) }
    }

    /// The tags of `tokens` (one per token).
    public func tag(_ tokens: [String]) -> [String] {
        tagIndices(tokens.map { TaggerWord($0) }).map { tags[Int($0)] }
    }

    /// Tokenizes `text` with the model's tokenizer and tags the tokens.
    public func tag(text: String) -> [TaggedToken] {
        let spans = tokenizer.tokenize(text)
        let tagged = tagIndices(spans.map { TaggerWord($0.text) })
        return zip(spans, tagged).map { TaggedToken(span: $0, tag: tags[Int($1)]) }
    }

    /// Tag numbers for words whose lexicon fields are not filled in yet.
    func tagIndices(_ words: [TaggerWord]) -> [Int32] {
        var padded = [TaggerWord.start, TaggerWord.start]
        padded.reserveCapacity(words.count + 4)
        for var w in words {
            lexicon.annotate(&w)
            padded.append(w)
        }
        padded += [TaggerWord.end, TaggerWord.end]
        return decode(padded, count: words.count)
    }

    /// Viterbi over `count` words given with their sentinels (`TaggerFeatures.keys`' layout).
    func decode(_ padded: [TaggerWord], count n: Int) -> [Int32] {
        guard n > 0 else { return [] }
        let t = tags.count
        var out = [Int32](repeating: 0, count: n)
        let scores = UnsafeMutablePointer<Float>.allocate(capacity: n * t)
        let delta = UnsafeMutablePointer<Float>.allocate(capacity: n * t)
        let back = UnsafeMutablePointer<Int32>.allocate(capacity: n * t)
        let keyBuffer = UnsafeMutablePointer<UInt64>.allocate(capacity: TaggerFeatures.maxKeys)
        let rowBuffer = UnsafeMutablePointer<Int32>.allocate(capacity: TaggerFeatures.maxKeys)
        defer {
            scores.deallocate(); delta.deallocate(); back.deallocate(); keyBuffer.deallocate(); rowBuffer.deallocate()
        }
        padded.withUnsafeBufferPointer { words in
            weights.withUnsafeBufferPointer { w in
                guard let words = words.baseAddress, let w = w.baseAddress else { return }
                for i in 0..<n {
                    let k = TaggerFeatures.keys(words, i, into: keyBuffer, context: lexicon.context)
                    var m = 0
                    for j in 0..<k {
                        let r = index.row(keyBuffer[j])
                        if r >= 0 { rowBuffer[m] = r; m &+= 1 }
                    }
                    TaggerKernels.emissions(w, t: t, rows: rowBuffer, count: m, out: scores + i &* t)
                }
            }
        }
        transitions.withUnsafeBufferPointer { a in
            out.withUnsafeMutableBufferPointer { o in
                guard let a = a.baseAddress, let o = o.baseAddress else { return }
                SequenceDecoder.viterbi(emissions: scores, n: n, tags: t, transitions: a, scratch: delta, back: back, out: o)
            }
        }
        return out
    }
}

/// One token of tagged text: the token, where it is in the text, and its tag.
public struct TaggedToken: Sendable, Equatable {
    public var span: TokenSpan
    public var tag: String
    public init(span: TokenSpan, tag: String) { self.span = span; self.tag = tag }
}
