import MLToolCore

extension TaggedCorpus {
    /// Parses two-column CoNLL `bytes` (already UTF-8): per line a token and its tag separated by tabs or spaces
    /// (with more columns, as in CoNLL-2003, the first is the token and the last the tag); a blank line ends a
    /// sentence; `-DOCSTART-` lines are skipped. A line with one field is a token with no tag: an error.
    public static func conll(bytes: [UInt8], file: String) throws -> TaggedCorpus {
        var sentences: [TaggedSentence] = []
        var tokens: [String] = [], tags: [String] = []
        var start = 0
        func finish() {
            if !tokens.isEmpty { sentences.append(TaggedSentence(tokens: tokens, tags: tags, line: start)) }
            tokens = []; tags = []; start = 0
        }
        for (number, range) in lines(bytes) {
            if isBlank(bytes, range) { finish(); continue }
            var fields: [Range<Int>] = []
            var f = -1
            for i in range {
                let separator = bytes[i] == 0x20 || bytes[i] == 0x09
                if separator {
                    if f >= 0 { fields.append(f..<i); f = -1 }
                } else if f < 0 {
                    f = i
                }
            }
            if f >= 0 { fields.append(f..<range.upperBound) }
            let token = string(bytes, fields[0])
            if token == "-DOCSTART-" { finish(); continue }
            guard fields.count >= 2 else {
                throw TextError.missingTag(file: file, line: number, token: token, column: "tag (expected: token, whitespace, tag)")
            }
            if start == 0 { start = number }
            tokens.append(token)
            tags.append(string(bytes, fields[fields.count - 1]))
        }
        finish()
        guard !sentences.isEmpty else { throw TextError.noDocuments(source: file, reason: "no sentences") }
        return TaggedCorpus(source: file, format: .conll, sentences: sentences)
    }
}
