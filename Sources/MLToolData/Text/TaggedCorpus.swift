import Foundation
import MLToolCore

/// Word-tagging data: sentences of words with one tag each, read from CoNLL-U (`TaggedCorpus.conllu`), two-column
/// CoNLL (`conll`: token and tag per line, a blank line between sentences, BIO/BIOES entity tags) or Create ML's
/// JSON (`json`: `[{"tokens": […], "labels": […]}]`). Every reader checks the file is UTF-8 and names the file and
/// line (JSON: the sentence's position) of the first problem.
public struct TaggedCorpus: Sendable {
    /// The file it came from, for messages.
    public var source: String
    public var format: TaggedDataFormat
    public var sentences: [TaggedSentence]

    public init(source: String, format: TaggedDataFormat, sentences: [TaggedSentence]) {
        self.source = source; self.format = format; self.sentences = sentences
    }

    /// Every tag used, sorted by UTF-8 bytes.
    public var tags: [String] {
        Array(Set(sentences.lazy.flatMap(\.tags))).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    /// Words in all sentences.
    public var tokenCount: Int { sentences.reduce(0) { $0 + $1.tokens.count } }

    /// Reads `path` in `format` (nil: `TaggedDataFormat.detect`). `tagColumn` applies to CoNLL-U; `tokensKey` and
    /// `labelsKey` to JSON.
    public static func load(_ path: String, format: TaggedDataFormat? = nil, tagColumn: TagColumn = .upos,
                            tokensKey: String = "tokens", labelsKey: String = "labels") throws -> TaggedCorpus {
        var bytes = try TableFile.read(path)  // line by line: a line over InputLimits.maxLineBytes is refused
        guard !bytes.isEmpty else { throw DataError.emptyFile(file: path) }
        try TextDataset.checkUTF8(bytes, file: path)
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes.removeFirst(3) }
        let format = format ?? TaggedDataFormat.detect(path: path, head: bytes.prefix(4096)) ?? .conll
        switch format {
        case .conllu: return try conllu(bytes: bytes, file: path, tagColumn: tagColumn)
        case .conll: return try conll(bytes: bytes, file: path)
        case .json: return try json(bytes: bytes, file: path, tokensKey: tokensKey, labelsKey: labelsKey)
        }
    }

    /// The lines of `bytes` as (1-based number, byte range without the line end; a CR before LF is dropped).
    static func lines(_ bytes: [UInt8]) -> [(number: Int, range: Range<Int>)] {
        var out: [(Int, Range<Int>)] = []
        var start = 0, number = 1
        bytes.withUnsafeBufferPointer { b in
            let n = b.count
            while start < n {
                var end = start
                while end < n && b[end] != 0x0A { end &+= 1 }
                var stop = end
                if stop > start && b[stop &- 1] == 0x0D { stop &-= 1 }
                out.append((number, start..<stop))
                start = end &+ 1
                number &+= 1
            }
        }
        return out
    }

    /// Whether `bytes[range]` holds only spaces, tabs and carriage returns.
    static func isBlank(_ bytes: [UInt8], _ range: Range<Int>) -> Bool {
        !bytes[range].contains { !($0 == 0x20 || $0 == 0x09 || $0 == 0x0D) }
    }

    static func string(_ bytes: [UInt8], _ range: Range<Int>) -> String {
        String(decoding: bytes[range], as: UTF8.self)
    }
}

/// The three tagged-data formats `TaggedCorpus` reads.
public enum TaggedDataFormat: String, Sendable, CaseIterable {
    /// Universal Dependencies' CoNLL-U: 10 tab-separated columns per word.
    case conllu
    /// Two (or more) whitespace-separated columns, token first and tag last; a blank line ends a sentence.
    case conll
    /// Create ML's word-tagger JSON: `[{"tokens": [...], "labels": [...]}, ...]`.
    case json

    /// The format of `path` from its extension (`.conllu`; `.conll`, `.bio`, `.iob`, `.iob2`, `.bioes`, `.ner`;
    /// `.json` when `head` starts with `[`), or nil when the file does not look like tagged data.
    public static func detect(path: String, head: ArraySlice<UInt8>) -> TaggedDataFormat? {
        switch (path as NSString).pathExtension.lowercased() {
        case "conllu": return .conllu
        case "conll", "bio", "iob", "iob2", "bioes", "ner": return .conll
        case "json":
            let first = head.first { !($0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D || $0 == 0xEF || $0 == 0xBB || $0 == 0xBF) }
            return first == UInt8(ascii: "[") ? .json : nil
        default: return nil
        }
    }

    /// `detect` on the first 4 KiB of the file at `path` (nil when it cannot be read).
    public static func detect(path: String) -> TaggedDataFormat? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        let head = [UInt8]((try? handle.read(upToCount: 4096)) ?? Data())
        return detect(path: path, head: head[...])
    }
}
