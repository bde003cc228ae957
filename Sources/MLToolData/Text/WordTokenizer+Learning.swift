import MLToolCore

extension WordTokenizer {
    /// Tokenizer settings that reproduce the tokenization of `corpus` as far as the rules allow:
    /// - `clitics`: words of 2–4 scalars that start with an apostrophe followed by a letter, or "n't", seen at
    ///   least `minCount` times;
    /// - `splitHyphens`: whether lone "-" words outnumber words with a hyphen between letters; then
    ///   `hyphenPrefixes`: the (lower-case) parts before the hyphen of words that kept it, when at least `minCount`
    ///   different such words share the part;
    /// - `splits`: CoNLL-U multiword tokens (lower case) whose words spell them, seen at least `minCount` times as
    ///   multiword tokens and more often so than as one word, unless the other rules already split them that way;
    /// - `keep`: words (lower case, at most 12 scalars, not addresses) seen at least `minCount` times, and more often
    ///   than as a multiword token, that the rules would otherwise cut.
    /// Lists are sorted, so the same corpus always gives the same settings.
    public static func learn(from corpus: TaggedCorpus, minCount: Int = 2) -> WordTokenizerConfig {
        var counts: [String: Int] = [:]
        var hyphenated = 0, loneHyphens = 0
        var prefixWords: [String: Set<String>] = [:]
        for s in corpus.sentences {
            for w in s.tokens {
                let lower = w.lowercased()
                counts[lower, default: 0] += 1
                if w == "-" { loneHyphens += 1 }
                let scalars = Array(lower.unicodeScalars)
                if scalars.count >= 3, let h = (1..<(scalars.count - 1)).first(where: {
                    scalars[$0] == "-" && scalars[$0 - 1].properties.isAlphabetic && isAlphanumeric(scalars[$0 + 1])
                }) {
                    hyphenated += 1
                    if scalars[..<h].allSatisfy(\.properties.isAlphabetic) {
                        prefixWords[String(String.UnicodeScalarView(scalars[..<h])), default: []].insert(lower)
                    }
                }
            }
        }
        var config = WordTokenizerConfig(splitHyphens: loneHyphens > hyphenated)
        if config.splitHyphens {
            config.hyphenPrefixes = prefixWords.filter { $0.value.count >= minCount }.keys.sorted()
        }
        config.clitics = counts.filter { word, n in
            guard n >= minCount else { return false }
            if word == "n't" || word == "n\u{2019}t" { return true }
            let s = Array(word.unicodeScalars)
            return (2...4).contains(s.count) && isApostrophe(s[0]) && s[1].properties.isAlphabetic
                && s.dropFirst().allSatisfy { $0.properties.isAlphabetic }
        }.keys.sorted()
        // Multiword tokens whose words spell them.
        var multiword: [String: (count: Int, lengths: [Int])] = [:]
        for s in corpus.sentences {
            for m in s.multiwordTokens where m.words.upperBound <= s.tokens.count {
                let form = m.form.lowercased()
                let words = s.tokens[m.words].map { $0.lowercased() }
                guard words.joined() == form else { continue }
                multiword[form, default: (0, words.map { $0.unicodeScalars.count })].count += 1
            }
        }
        let clitics = (try? WordTokenizer(config: config)) ?? nil
        for (form, entry) in multiword where entry.count >= minCount && entry.count > counts[form, default: 0] {
            if let t = clitics, t.words(form).map({ $0.unicodeScalars.count }) == entry.lengths { continue }
            config.splits[form] = entry.lengths
        }
        // Words the rules would cut.
        guard let plain = try? WordTokenizer(config: config) else { return config }
        config.keep = counts.filter { word, n in
            n >= minCount && n > multiword[word, default: (0, [])].count && word.unicodeScalars.count <= 12
                && word.unicodeScalars.contains(where: isPunctuation) && plain.words(word) != [word]
                && !config.clitics.contains(word)
        }.keys.sorted()
        return config
    }
}
