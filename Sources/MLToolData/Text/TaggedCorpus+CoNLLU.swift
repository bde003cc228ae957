import MLToolCore

extension TaggedCorpus {
    /// Parses CoNLL-U `bytes` (already UTF-8): comment lines (`#`; `# text = …` is kept as the sentence text), one
    /// line of exactly 10 tab-separated fields per word, a blank line after each sentence. Multiword-token lines
    /// (`3-4`) are kept as `multiwordTokens` and are not words; empty nodes (`5.1`) are skipped. Word ids must count
    /// 1, 2, 3, … within a sentence. A word whose `tagColumn` is `_` (or whose MISC lacks the key) has no tag: an
    /// error.
    public static func conllu(bytes: [UInt8], file: String, tagColumn: TagColumn = .upos) throws -> TaggedCorpus {
        var sentences: [TaggedSentence] = []
        var tokens: [String] = [], tags: [String] = [], mwts: [MultiwordToken] = []
        var text: String?
        var start = 0   // first line of the current sentence (0: none yet)
        func finish() throws {
            guard start > 0 else { return }
            guard !tokens.isEmpty else { throw TextError.emptySentence(file: file, line: start) }
            sentences.append(TaggedSentence(tokens: tokens, tags: tags, line: start, text: text, multiwordTokens: mwts))
            tokens = []; tags = []; mwts = []; text = nil; start = 0
        }
        let textPrefix = Array("# text = ".utf8)
        for (number, range) in lines(bytes) {
            if isBlank(bytes, range) { try finish(); continue }
            if start == 0 { start = number }
            if bytes[range.lowerBound] == UInt8(ascii: "#") {
                if bytes[range].starts(with: textPrefix) {
                    text = string(bytes, (range.lowerBound + textPrefix.count)..<range.upperBound)
                }
                continue
            }
            var fields: [Range<Int>] = []
            var f = range.lowerBound
            for i in range where bytes[i] == 0x09 { fields.append(f..<i); f = i + 1 }
            fields.append(f..<range.upperBound)
            guard fields.count == 10 else {
                throw TextError.columnCount(file: file, line: number, expected: 10, actual: fields.count)
            }
            let id = string(bytes, fields[0])
            if id.contains(".") {
                // An empty node (enhanced dependencies): not a word of the sentence.
                guard id.split(separator: ".", omittingEmptySubsequences: false).allSatisfy({ Int($0) != nil }) else {
                    throw TextError.badField(file: file, line: number, field: "ID", value: id,
                                             expected: "a word id, a range N-M or an empty node N.M")
                }
                continue
            }
            if id.contains("-") {
                let ends = id.split(separator: "-", omittingEmptySubsequences: false).map { Int($0) }
                guard ends.count == 2, let lo = ends[0], let hi = ends[1], lo == tokens.count + 1, hi > lo else {
                    throw TextError.badField(file: file, line: number, field: "ID", value: id,
                                             expected: "a range \(tokens.count + 1)-M with M > \(tokens.count + 1)")
                }
                mwts.append(MultiwordToken(form: string(bytes, fields[1]), words: (lo - 1)..<hi))
                continue
            }
            guard let n = Int(id), n == tokens.count + 1 else {
                throw TextError.badField(file: file, line: number, field: "ID", value: id,
                                         expected: "word id \(tokens.count + 1)")
            }
            let form = string(bytes, fields[1])
            let tag: String?
            switch tagColumn {
            case .upos: tag = value(bytes, fields[3])
            case .xpos: tag = value(bytes, fields[4])
            case .misc(let key): tag = miscValue(bytes, fields[9], key: key)
            }
            guard let tag, !tag.isEmpty else {
                throw TextError.missingTag(file: file, line: number, token: form, column: "\(tagColumn.name) tag")
            }
            tokens.append(form)
            tags.append(tag)
        }
        try finish()
        // A multiword token must cover words that exist.
        for s in sentences {
            if let m = s.multiwordTokens.first(where: { $0.words.upperBound > s.tokens.count }) {
                throw TextError.badField(file: file, line: s.line, field: "multiword token", value: m.form,
                                         expected: "words \(m.words.lowerBound + 1)-\(m.words.upperBound) in a sentence of \(s.tokens.count) words")
            }
        }
        guard !sentences.isEmpty else { throw TextError.noDocuments(source: file, reason: "no sentences") }
        return TaggedCorpus(source: file, format: .conllu, sentences: sentences)
    }

    /// A field's text, nil for `_`.
    static func value(_ bytes: [UInt8], _ range: Range<Int>) -> String? {
        range.count == 1 && bytes[range.lowerBound] == UInt8(ascii: "_") ? nil : string(bytes, range)
    }

    /// The value of `key` in a MISC field (`Key=Value|Key=Value`), nil when absent.
    static func miscValue(_ bytes: [UInt8], _ range: Range<Int>, key: String) -> String? {
        guard let misc = value(bytes, range) else { return nil }
        for item in misc.split(separator: "|") {
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if parts.count == 2 && parts[0] == key { return String(parts[1]) }
        }
        return nil
    }
}
