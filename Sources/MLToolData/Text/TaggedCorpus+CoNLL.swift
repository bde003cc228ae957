import MLToolCore

extension TaggedCorpus {
    /// Parses CoNLL `bytes` (already UTF-8): per line a token and its tag separated by tabs or spaces; a blank line
    /// ends a sentence; `-DOCSTART-` lines and CoNLL-U-style comments (`# key = value`, `# newdoc`, `# newpar`, with no
    /// tab) are skipped. With more columns (`conllLayout`): a first column that numbers the tokens of each sentence
    /// (1, 2, 3…, as UNER's `.iob2` files and CoNLL-U have) is not the token; the tag is the last column whose every
    /// value is an entity tag (O, B-X, I-X, E-X, S-X, L-X, U-X: CoNLL-2003's last column, UNER's third), else the last
    /// column. A line with one field is a token with no tag: an error.
    public static func conll(bytes: [UInt8], file: String) throws -> TaggedCorpus {
        let rows = try conllRows(bytes, file: file)
        let layout = conllLayout(rows, bytes)
        var sentences: [TaggedSentence] = []
        for sentence in rows where !sentence.isEmpty {
            var tokens: [String] = [], tags: [String] = []
            for row in sentence {
                let fields = row.fields
                guard fields.count > layout.token + 1 else {
                    throw TextError.missingTag(file: file, line: row.line, token: string(bytes, fields[fields.count - 1]),
                                               column: "tag (expected: token, whitespace, tag)")
                }
                tokens.append(string(bytes, fields[layout.token]))
                tags.append(string(bytes, fields[min(layout.tag ?? fields.count - 1, fields.count - 1)]))
            }
            sentences.append(TaggedSentence(tokens: tokens, tags: tags, line: sentence[0].line))
        }
        guard !sentences.isEmpty else { throw TextError.noDocuments(source: file, reason: "no sentences") }
        return TaggedCorpus(source: file, format: .conll, sentences: sentences)
    }

    /// One token line: its number and its whitespace-separated fields.
    struct CoNLLRow {
        var line: Int
        var fields: [Range<Int>]
    }

    /// The token lines of each sentence (comments and `-DOCSTART-` left out); a one-field line is refused here.
    static func conllRows(_ bytes: [UInt8], file: String) throws -> [[CoNLLRow]] {
        var sentences: [[CoNLLRow]] = [[]]
        for (number, range) in lines(bytes) {
            if isBlank(bytes, range) { sentences.append([]); continue }
            if isComment(bytes, range) { continue }
            let fields = conllFields(bytes, range)
            let token = string(bytes, fields[0])
            if token == "-DOCSTART-" { sentences.append([]); continue }
            guard fields.count >= 2 else {
                throw TextError.missingTag(file: file, line: number, token: token, column: "tag (expected: token, whitespace, tag)")
            }
            sentences[sentences.count - 1].append(CoNLLRow(line: number, fields: fields))
        }
        return sentences
    }

    /// Where the token and the tag are (`conll`): the token after a numbering column, the tag the last column of
    /// entity tags (nil: each row's last field).
    static func conllLayout(_ sentences: [[CoNLLRow]], _ bytes: [UInt8]) -> (token: Int, tag: Int?) {
        let width = sentences.lazy.flatMap { $0 }.map(\.fields.count).min() ?? 2
        guard width >= 3 else { return (0, nil) }
        let numbered = sentences.allSatisfy { s in
            s.enumerated().allSatisfy { string(bytes, $1.fields[0]) == String($0 + 1) }
        }
        let token = numbered ? 1 : 0
        let tag = (token + 1..<width).last { column in
            sentences.allSatisfy { $0.allSatisfy { isEntityTag(bytes, $0.fields[column]) } }
        }
        return (token, tag)
    }

    /// O, or a one-letter prefix of B, I, E, S, L, U, a hyphen and a type.
    static func isEntityTag(_ bytes: [UInt8], _ r: Range<Int>) -> Bool {
        if r.count == 1 { return bytes[r.lowerBound] == UInt8(ascii: "O") }
        return r.count >= 3 && "BIESLU".utf8.contains(bytes[r.lowerBound]) && bytes[r.lowerBound + 1] == UInt8(ascii: "-")
    }

    /// A CoNLL-U comment: `#`, no tab, and `key = value` or a bare `newdoc` / `newpar` mark.
    static func isComment(_ bytes: [UInt8], _ r: Range<Int>) -> Bool {
        guard !r.isEmpty, bytes[r.lowerBound] == UInt8(ascii: "#"), !bytes[r].contains(0x09) else { return false }
        let text = string(bytes, r)
        return text.contains(" = ") || text == "# newdoc" || text == "# newpar"
    }

    /// The fields of a line, separated by spaces or tabs.
    static func conllFields(_ bytes: [UInt8], _ range: Range<Int>) -> [Range<Int>] {
        var fields: [Range<Int>] = []
        var f = -1
        for i in range {
            if bytes[i] == 0x20 || bytes[i] == 0x09 {
                if f >= 0 { fields.append(f..<i); f = -1 }
            } else if f < 0 {
                f = i
            }
        }
        if f >= 0 { fields.append(f..<range.upperBound) }
        return fields
    }
}
