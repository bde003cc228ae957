import Foundation
import MLToolCore

extension TermCorpus {
    /// A vocabulary (or hash settings) and idf fitted on some documents, with the column of every term id (−1: not
    /// a feature). Training needs only the columns, counts and idf; the vocabulary's text is made on request.
    public struct Fitted: Sendable {
        public let config: TextConfig
        public let featureCount: Int
        /// One per column with "tfidf", empty otherwise.
        public let idf: [Float]
        let columnOfTerm: [Int32]
        /// The term id of each column, in column order (empty with hashing).
        let columnTerms: [Int]
        let table: TermTable

        /// The vocabulary as a model stores it: the column names joined by "\n" (`TextVectorizer.vocabularyBytes`).
        public func vocabularyBytes() -> [UInt8] { table.joinedBytes(columnTerms, separator: 0x0A) }

        /// The equivalent `TextVectorizer` (it holds every column name as a String).
        public func makeVectorizer() -> TextVectorizer {
            TextVectorizer(config: config, vocabulary: table.strings(columnTerms), idf: idf)
        }
    }

    /// The same vocabulary and idf as `TextVectorizer.fit` on those documents' texts.
    public func vectorizer(fittedOn indices: [Int]) -> Fitted {
        let termCount = table.count
        var columnOfTerm = [Int32](repeating: -1, count: termCount)
        var df: [Int]
        var columnTerms: [Int] = []
        if let bits = config.hashBits {
            for t in 0..<termCount { columnOfTerm[t] = Int32(TextVectorizer.hashColumn(table.bytes(of: t), bits: bits)) }
            df = [Int](repeating: 0, count: 1 << bits)
            var lastSeen = [Int](repeating: -1, count: 1 << bits)
            for (position, doc) in indices.enumerated() {
                for i in documentOffsets[doc]..<documentOffsets[doc + 1] {
                    let c = Int(columnOfTerm[Int(termIDs[i])])
                    if lastSeen[c] != position { lastSeen[c] = position; df[c] += 1 }
                }
            }
        } else {
            // Document frequencies: a term counts once per document (`lastSeen` holds the last one it was in).
            var termDF = [Int32](repeating: 0, count: termCount)
            var lastSeen = [Int32](repeating: -1, count: termCount)
            termIDs.withUnsafeBufferPointer { ids in
                termDF.withUnsafeMutableBufferPointer { df in
                    lastSeen.withUnsafeMutableBufferPointer { last in
                        for (position, doc) in indices.enumerated() {
                            let p = Int32(truncatingIfNeeded: position)
                            for i in documentOffsets[doc]..<documentOffsets[doc + 1] {
                                let t = Int(ids[i])
                                if last[t] != p { last[t] = p; df[t] &+= 1 }
                            }
                        }
                    }
                }
            }
            let kept = (0..<termCount).filter { Int(termDF[$0]) >= config.minCount }
            columnTerms = table.byteOrder(kept, maxWords: config.wordNgrams[1]).map { kept[$0] }
            df = columnTerms.map { Int(termDF[$0]) }
            for (column, t) in columnTerms.enumerated() { columnOfTerm[t] = Int32(column) }
        }
        var idf: [Float] = []
        if config.weighting == "tfidf" {
            let n = indices.count
            idf = df.map { Float(log(Double(1 + n) / Double(1 + $0)) + 1) }
        }
        return Fitted(config: config, featureCount: config.hashBits.map { 1 << $0 } ?? columnTerms.count, idf: idf,
                      columnOfTerm: columnOfTerm, columnTerms: columnTerms, table: table)
    }
}
