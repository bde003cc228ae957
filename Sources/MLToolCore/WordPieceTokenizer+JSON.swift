import Foundation

/// Reading a Hugging Face `tokenizer.json` that describes a BERT WordPiece tokenizer. Anything else — another
/// normalizer, pre-tokenizer, model or post-processor, special tokens matched after normalisation — is refused by
/// name, never approximated. Every refusal is a `CoreError.invalidValue` with the byte offset and the field's path (exit 65).
extension WordPieceTokenizer {
    /// The largest tokenizer.json read: 64 MiB (BERT's is 0.5 MB; multilingual vocabularies stay under 20 MB).
    public static let maxFileBytes = 64 << 20
    /// The most vocabulary entries: 1,000,000 (BERT has 30,522; multilingual BERT 119,547).
    public static let maxVocabulary = 1_000_000
    /// The deepest JSON nesting a BERT tokenizer.json needs (post_processor.special_tokens.NAME.ids is 5).
    public static let maxDepth = 16

    /// Reads the tokenizer.json at `path`.
    public init(tokenizerJSON path: String) throws {
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        guard let size = (attributes?[.size] as? NSNumber)?.intValue else {
            throw CoreError.cannotRead(file: path, reason: "no such file")
        }
        guard size <= Self.maxFileBytes else {
            throw CoreError.invalidValue(file: path, offset: 0, what: "file", expected: "at most \(Self.maxFileBytes) bytes",
                                         actual: "\(size) bytes")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CoreError.cannotRead(file: path, reason: "unreadable")
        }
        try self.init(tokenizerJSON: [UInt8](data), file: path)
    }

    /// Reads tokenizer.json bytes; `file` names them in errors.
    public init(tokenizerJSON bytes: [UInt8], file: String) throws {
        let r = TokenizerJSONReader(bytes: bytes, file: file)
        guard bytes.count <= Self.maxFileBytes else {
            throw r.fail(nil, "file", "at most \(Self.maxFileBytes) bytes", "\(bytes.count) bytes")
        }
        let root = try r.root(depth: Self.maxDepth)
        let n = try r.normalizer(root)
        try r.requireType(try r.object(root["pre_tokenizer"], "pre_tokenizer", "pre_tokenizer"), "pre_tokenizer", "pre_tokenizer",
                          "BertPreTokenizer")
        let model = try r.object(root["model"], "model", "model")
        try r.requireType(model, "model", "model", "WordPiece")
        let vocab = try r.vocabulary(model, maxVocabulary: Self.maxVocabulary)
        var ids: [String: Int] = [:]
        ids.reserveCapacity(vocab.count)
        for (id, token) in vocab.enumerated() { ids[token] = id }
        let (unknown, prefix, maxChars) = try r.wordPieceSettings(model, ids)
        let specials = try r.addedTokens(root, vocabularySize: vocab.count)
        let (cls, sep) = try r.postProcessor(root, ids, vocabularySize: vocab.count)
        let maxLength = try r.truncation(root)
        let pad = (root["padding"]?.object?["pad_id"]?.integer).flatMap { vocab.indices.contains($0) ? $0 : nil } ?? 0

        self.init(vocabulary: vocab, unknown: unknown, cls: cls, sep: sep, pad: pad, specials: specials,
                  continuingPrefix: prefix, maxInputCharsPerWord: maxChars, maxLength: maxLength, cleanText: n.clean,
                  handleChineseChars: n.chinese, stripAccents: n.strip, lowercase: n.lower)
    }
}

/// The sections of a tokenizer.json, one function each; every refusal names the field and its byte offset.
private struct TokenizerJSONReader {
    let bytes: [UInt8]
    let file: String

    func fail(_ key: String?, _ place: String, _ expected: String, _ actual: String) -> CoreError {
        let offset = key.flatMap { JSONValue.offset(ofKey: $0, in: bytes) } ?? 0
        return .invalidValue(file: file, offset: offset, what: place, expected: expected, actual: actual)
    }

    func root(depth: Int) throws -> [String: JSONValue] {
        switch JSONValue.parse(bytes, depth: depth) {
        case let .failure(problem):
            throw CoreError.invalidValue(file: file, offset: problem.offset, what: "JSON",
                                         expected: "JSON nested at most \(depth) deep", actual: problem.reason)
        case let .success(value):
            guard let o = value.object else { throw fail(nil, "top level", "an object", value.kind) }
            return o
        }
    }

    func object(_ v: JSONValue?, _ key: String, _ place: String) throws -> [String: JSONValue] {
        guard let o = v?.object else { throw fail(key, place, "an object", v?.kind ?? "nothing") }
        return o
    }

    func requireType(_ o: [String: JSONValue], _ key: String, _ place: String, _ wanted: String) throws {
        guard o["type"]?.string == wanted else {
            throw fail(key, place + ".type", "\"\(wanted)\" (mltool reads BERT WordPiece tokenizers only)",
                       o["type"]?.string.map { "\"\($0)\"" } ?? o["type"]?.kind ?? "nothing")
        }
    }

    func flag(_ o: [String: JSONValue], _ name: String, _ place: String, default value: Bool?) throws -> Bool? {
        switch o[name] {
        case nil, .null?: return value
        case let .bool(b)?: return b
        case let other?: throw fail(name, place + "." + name, "true, false or null", other.kind)
        }
    }

    func count(_ o: [String: JSONValue], _ name: String, _ place: String, default value: Int, range: ClosedRange<Int>) throws -> Int {
        switch o[name] {
        case nil, .null?: return value
        case let .integer(i)? where range.contains(i): return i
        case let other?: throw fail(name, place + "." + name, "an integer in \(range)",
                                    other.integer.map(String.init) ?? other.kind)
        }
    }

    /// normalizer: BertNormalizer.
    func normalizer(_ root: [String: JSONValue]) throws -> (lower: Bool, clean: Bool, chinese: Bool, strip: Bool) {
        let normalizer = try object(root["normalizer"], "normalizer", "normalizer")
        try requireType(normalizer, "normalizer", "normalizer", "BertNormalizer")
        let lower = try flag(normalizer, "lowercase", "normalizer", default: true) ?? true
        let clean = try flag(normalizer, "clean_text", "normalizer", default: true) ?? true
        let chinese = try flag(normalizer, "handle_chinese_chars", "normalizer", default: true) ?? true
        let strip = try flag(normalizer, "strip_accents", "normalizer", default: nil) ?? lower
        return (lower, clean, chinese, strip)
    }

    /// model.vocab: the WordPiece vocabulary, its ids dense from 0.
    func vocabulary(_ model: [String: JSONValue], maxVocabulary: Int) throws -> [String] {
        let vocabObject = try object(model["vocab"], "vocab", "model.vocab")
        guard (1...maxVocabulary).contains(vocabObject.count) else {
            throw fail("vocab", "model.vocab", "1 to \(maxVocabulary) tokens", "\(vocabObject.count)")
        }
        var vocabulary = [String?](repeating: nil, count: vocabObject.count)
        for (token, value) in vocabObject {
            guard let id = value.integer, vocabulary.indices.contains(id) else {
                throw fail(token, "model.vocab[\"\(token)\"]", "an id in 0..<\(vocabObject.count) (ids are dense)",
                           value.integer.map(String.init) ?? value.kind)
            }
            if let other = vocabulary[id] {
                throw fail(token, "model.vocab[\"\(token)\"]", "an id of its own", "\(id), also the id of \"\(other)\"")
            }
            vocabulary[id] = token
        }
        return vocabulary.compactMap { $0 }   // all set: ids are distinct and as many as the tokens
    }

    /// The model's unknown token, continuing-subword prefix and longest word.
    func wordPieceSettings(_ model: [String: JSONValue], _ ids: [String: Int]) throws -> (unknown: Int, prefix: String, maxChars: Int) {
        guard let unkToken = model["unk_token"]?.string else {
            throw fail("unk_token", "model.unk_token", "a string", model["unk_token"]?.kind ?? "nothing")
        }
        guard let unknown = ids[unkToken] else {
            throw fail("unk_token", "model.unk_token", "a token of the vocabulary", "\"\(unkToken)\"")
        }
        let prefix: String
        switch model["continuing_subword_prefix"] {
        case nil, .null?: prefix = "##"
        case let .string(s)?: prefix = s
        case let other?: throw fail("continuing_subword_prefix", "model.continuing_subword_prefix", "a string", other.kind)
        }
        let maxChars = try count(model, "max_input_chars_per_word", "model", default: 100, range: 1...1_000_000)
        return (unknown, prefix, maxChars)
    }

    /// added_tokens: matched in raw text; mltool matches them as written, so they must say so.
    func addedTokens(_ root: [String: JSONValue], vocabularySize: Int) throws -> [String: Int] {
        var specials: [String: Int] = [:]
        guard let added = root["added_tokens"], added != .null else { return specials }
        guard let list = added.array else { throw fail("added_tokens", "added_tokens", "an array", added.kind) }
        for (k, entry) in list.enumerated() {
            let place = "added_tokens[\(k)]"
            guard let o = entry.object, let content = o["content"]?.string, let i = o["id"]?.integer else {
                throw fail("added_tokens", place, "an object with a string content and an integer id", entry.kind)
            }
            guard (0..<vocabularySize).contains(i) else {
                throw fail("added_tokens", place + ".id", "an id in 0..<\(vocabularySize)", "\(i)")
            }
            for option in ["normalized", "lstrip", "rstrip", "single_word"] where o[option] == .bool(true) {
                throw fail(option, place + "." + option, "false (not yet supported)", "true")
            }
            specials[content] = i
        }
        return specials
    }

    /// post_processor: [CLS] A [SEP], as BertProcessing or TemplateProcessing.
    func postProcessor(_ root: [String: JSONValue], _ ids: [String: Int], vocabularySize: Int) throws -> (cls: Int, sep: Int) {
        let post = try object(root["post_processor"], "post_processor", "post_processor")
        switch post["type"]?.string {
        case "BertProcessing"?:
            func pair(_ name: String) throws -> Int {
                guard let p = post[name]?.array, p.count == 2, let token = p[0].string, let i = p[1].integer,
                      ids[token] == i else {
                    throw fail(name, "post_processor." + name, "[token, its id in the vocabulary]", post[name]?.kind ?? "nothing")
                }
                return i
            }
            return (try pair("cls"), try pair("sep"))
        case "TemplateProcessing"?:
            return try template(post, vocabularySize: vocabularySize)
        default:
            throw fail("post_processor", "post_processor.type", "\"TemplateProcessing\" or \"BertProcessing\"",
                       post["type"]?.string.map { "\"\($0)\"" } ?? post["type"]?.kind ?? "nothing")
        }
    }

    /// A TemplateProcessing post-processor's single-sequence template: SpecialToken, Sequence A, SpecialToken.
    private func template(_ post: [String: JSONValue], vocabularySize: Int) throws -> (cls: Int, sep: Int) {
        guard let single = post["single"]?.array, single.count == 3,
              let first = single[0].object?["SpecialToken"]?.object?["id"]?.string,
              single[1].object?["Sequence"]?.object?["id"]?.string == "A",
              let last = single[2].object?["SpecialToken"]?.object?["id"]?.string else {
            throw fail("single", "post_processor.single", "[SpecialToken, Sequence A, SpecialToken]",
                       post["single"]?.kind ?? "nothing")
        }
        let table = try object(post["special_tokens"], "special_tokens", "post_processor.special_tokens")
        func special(_ name: String) throws -> Int {
            guard let entry = table[name]?.object, let list = entry["ids"]?.integers, list.count == 1,
                  (0..<vocabularySize).contains(list[0]) else {
                throw fail(name, "post_processor.special_tokens[\"\(name)\"].ids", "one id of the vocabulary",
                           table[name]?.kind ?? "nothing")
            }
            return list[0]
        }
        return (try special(first), try special(last))
    }

    /// truncation: the longest id sequence (512, BERT's positions, when the file sets none).
    func truncation(_ root: [String: JSONValue]) throws -> Int {
        guard let t = root["truncation"], t != .null else { return 512 }
        let o = try object(t, "truncation", "truncation")
        let maxLength = try count(o, "max_length", "truncation", default: 512, range: 2...1_000_000)
        if let direction = o["direction"]?.string, direction != "Right" {
            throw fail("direction", "truncation.direction", "\"Right\" (not yet supported otherwise)", "\"\(direction)\"")
        }
        return maxLength
    }
}
