import Foundation
import MLToolCore

/// Maps documents to sparse feature rows: the term counts of `TextTokenizer`, weighted and normalised as `TextConfig`
/// says. With `hashBits` a term's column is FNV-1a-64(UTF-8) mod 2^hashBits and there is no vocabulary.
///
/// Weighting, per document and column (tf = the term's count in the document, n = training documents,
/// df = training documents containing the term):
/// - "tfidf": (sublinearTF ? 1 + ln tf : tf) · idf, idf = ln((1 + n) / (1 + df)) + 1 (scikit-learn's smooth idf);
/// - "count": tf;  "binary": 1.
/// Then, with `l2Normalize`, each row is divided by its Euclidean norm. `minCount` is the minimum df for a term to
/// enter the vocabulary (scikit-learn's integer `min_df`); it does not apply to hashed features.
public struct TextVectorizer: Sendable, Equatable {
    public let config: TextConfig
    /// Column names in column order (UTF-8 byte order, as scikit-learn sorts); empty with hashing.
    public let vocabulary: [String]
    /// One per column with "tfidf", empty otherwise.
    public let idf: [Float]
    /// Columns of the rows `transform` makes.
    public let featureCount: Int
    /// Term → column, built on the first `transform` (training never needs it: it maps term ids to columns).
    private let index: LazyIndex

    init(config: TextConfig, vocabulary: [String], idf: [Float]) {
        self.config = config; self.vocabulary = vocabulary; self.idf = idf
        self.featureCount = config.hashBits.map { 1 << $0 } ?? vocabulary.count
        self.index = LazyIndex()
    }

    /// A dictionary computed from `vocabulary` once, under a lock; it takes no part in equality.
    final class LazyIndex: @unchecked Sendable, Equatable {
        private let lock = NSLock()
        private var built: [String: Int32]?

        func get(_ vocabulary: [String]) -> [String: Int32] {
            lock.lock()
            defer { lock.unlock() }
            if let built { return built }
            var index: [String: Int32] = [:]
            index.reserveCapacity(vocabulary.count)
            for (i, term) in vocabulary.enumerated() { index[term] = Int32(i) }
            built = index
            return index
        }

        static func == (a: LazyIndex, b: LazyIndex) -> Bool { true }
    }

    /// Learns the vocabulary (unless hashing) and idf from training documents.
    public static func fit(documents: [String], config: TextConfig) throws -> TextVectorizer {
        let tokenizer = try TextTokenizer(config: config)
        let n = documents.count
        var vocabulary: [String] = []
        var df: [Int]
        if let bits = config.hashBits {
            df = [Int](repeating: 0, count: 1 << bits)
            for doc in documents {
                for column in Set(tokenizer.terms(doc).map { hashColumn($0, bits: bits) }) { df[column] += 1 }
            }
        } else {
            var counts: [String: Int] = [:]
            for doc in documents { for term in Set(tokenizer.terms(doc)) { counts[term, default: 0] += 1 } }
            let kept = counts.filter { $0.value >= config.minCount }
            vocabulary = kept.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            df = vocabulary.map { kept[$0] ?? 0 }
        }
        var idf: [Float] = []
        if config.weighting == "tfidf" {
            idf = df.map { Float(log(Double(1 + n) / Double(1 + $0)) + 1) }
        }
        return TextVectorizer(config: config, vocabulary: vocabulary, idf: idf)
    }

    /// A vectorizer read back from a model: `vocabularyBytes` (newline-separated UTF-8, nil with hashing) and `idf`
    /// (nil unless "tfidf"). `tensor` names the vocabulary tensor in errors.
    public init(config: TextConfig, vocabularyBytes: [UInt8]?, idf: [Float]?,
                tensor: String = "text.vocabulary") throws {
        _ = try TextTokenizer(config: config)
        var vocabulary: [String] = []
        if config.hashBits == nil {
            let bytes = vocabularyBytes ?? []
            var seen = Set<String>()
            var start = 0
            while start < bytes.count {
                let end = bytes[start...].firstIndex(of: 0x0A) ?? bytes.count
                guard end > start else {
                    throw TextError.invalidVocabulary(tensor: tensor, offset: start, reason: "empty entry")
                }
                guard let entry = String(validating: bytes[start..<end], as: UTF8.self) else {
                    throw TextError.invalidVocabulary(tensor: tensor, offset: start, reason: "invalid UTF-8")
                }
                guard seen.insert(entry).inserted else {
                    throw TextError.invalidVocabulary(tensor: tensor, offset: start,
                                                      reason: "duplicate entry '\(entry)'")
                }
                vocabulary.append(entry)
                start = end + 1
                if end + 1 == bytes.count {
                    throw TextError.invalidVocabulary(tensor: tensor, offset: end, reason: "trailing newline")
                }
            }
        }
        let columns = config.hashBits.map { 1 << $0 } ?? vocabulary.count
        let idfValues = config.weighting == "tfidf" ? (idf ?? []) : []
        if config.weighting == "tfidf" {
            guard idfValues.count == columns else {
                throw TextError.sizeMismatch(what: "tensor '\(config.idfTensor ?? "text.idf")'", expected: columns,
                                             actual: idfValues.count)
            }
        }
        self.init(config: config, vocabulary: vocabulary, idf: idfValues)
    }

    /// The vocabulary as stored in a model: entries joined by "\n" (no trailing newline).
    public func vocabularyBytes() -> [UInt8] { Array(vocabulary.joined(separator: "\n").utf8) }

    /// One weighted row per document; terms outside the vocabulary are ignored. Hashed features take
    /// `TextTokenizer.appendHashedTerms` (no string per term); `transformReference` is the term-by-term definition.
    public func transform(_ documents: [String]) throws -> CSRMatrix {
        guard let bits = config.hashBits else { return try transformReference(documents) }
        let tokenizer = try TextTokenizer(config: config)
        var offsets = [0], columns: [Int32] = [], values: [Float] = []
        var hashed: [Int32] = [], row: [Double] = []
        for doc in documents {
            hashed.removeAll(keepingCapacity: true)
            tokenizer.appendHashedTerms(of: doc, bits: bits, into: &hashed)
            hashed.sort()
            // Runs of equal columns are the counts, in ascending column order (as the reference's sorted keys).
            row.removeAll(keepingCapacity: true)
            var i = 0
            while i < hashed.count {
                var j = i &+ 1
                while j < hashed.count && hashed[j] == hashed[i] { j &+= 1 }
                columns.append(hashed[i])
                row.append(weight(tf: Double(j &- i), column: Int(hashed[i])))
                i = j
            }
            appendNormalized(row, to: &values)
            offsets.append(columns.count)
        }
        return CSRMatrix(unchecked: documents.count, cols: featureCount, rowOffsets: offsets, columns: columns,
                         values: values)
    }

    /// A term's weight in its row before normalisation, from its count in the document.
    private func weight(tf: Double, column: Int) -> Double {
        switch config.weighting {
        case "binary": return 1
        case "count": return tf
        default: return (config.sublinearTF ? 1 + log(tf) : tf) * Double(idf[column])
        }
    }

    /// `row` L2-normalised when the config says so, appended as Float.
    private func appendNormalized(_ row: [Double], to values: inout [Float]) {
        let norm = config.l2Normalize ? row.reduce(0) { $0 + $1 * $1 }.squareRoot() : 0
        for v in row { values.append(Float(norm > 0 ? v / norm : v)) }
    }

    /// `transform` term by term: every term as a string, counted in a dictionary (the definition; vocabulary
    /// models always take it).
    public func transformReference(_ documents: [String]) throws -> CSRMatrix {
        let tokenizer = try TextTokenizer(config: config)
        let index = config.hashBits == nil ? self.index.get(vocabulary) : [:]
        var offsets = [0], columns: [Int32] = [], values: [Float] = []
        for doc in documents {
            var counts: [Int32: Int] = [:]
            for term in tokenizer.terms(doc) {
                if let bits = config.hashBits {
                    counts[Int32(Self.hashColumn(term, bits: bits)), default: 0] += 1
                } else if let column = index[term] {
                    counts[column, default: 0] += 1
                }
            }
            let sorted = counts.keys.sorted()
            columns += sorted
            appendNormalized(sorted.map { weight(tf: Double(counts[$0] ?? 0), column: Int($0)) }, to: &values)
            offsets.append(columns.count)
        }
        return CSRMatrix(unchecked: documents.count, cols: featureCount, rowOffsets: offsets, columns: columns,
                         values: values)
    }

    /// FNV-1a (64-bit) of the term's UTF-8, reduced to `bits` bits: stable across machines and runs.
    static func hashColumn(_ term: String, bits: Int) -> Int { hashColumn(Array(term.utf8), bits: bits) }

    /// `hashColumn` of a term given as UTF-8 bytes.
    static func hashColumn(_ utf8: [UInt8], bits: Int) -> Int {
        var h = TextTokenizer.fnvOffset
        for b in utf8 { h = TextTokenizer.fnv(h, b) }
        return Int(h & ((1 << UInt64(bits)) - 1))
    }
}
