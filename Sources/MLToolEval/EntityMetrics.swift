/// Entities in BIO / BIOES tag sequences and their precision, recall and F1, as the Python package `seqeval`
/// (1.2, default mode) defines them: a tag's first character is its position (B, I, E, S, O), the text after the
/// first "-" its type ("B-PER" → B, PER; "O" → type "_"); a chunk ends and starts by seqeval's `end_of_chunk` and
/// `start_of_chunk` rules, so ill-formed sequences (I- after O) are read as it reads them. Sentences are joined with
/// an "O" between them; an entity is its type with its first and last positions, and a predicted entity is correct
/// when the same triple is in the truth.
public enum EntityMetrics {
    /// One entity: its type and its first and last positions (inclusive) in the joined sequence.
    public struct Span: Hashable, Sendable {
        public var type: String
        public var start: Int
        public var end: Int
        public init(type: String, start: Int, end: Int) { self.type = type; self.start = start; self.end = end }
    }

    /// The entities of `sentences` joined with an "O" after each (seqeval's `get_entities` on a list of lists).
    public static func entities(_ sentences: [[String]]) -> [Span] {
        var flat: [String] = []
        for s in sentences { flat += s; flat.append("O") }
        return entities(flat)
    }

    /// The entities of one sequence (seqeval's `get_entities`).
    public static func entities(_ tags: [String]) -> [Span] {
        var chunks: [Span] = []
        var previousTag: Character = "O", previousType = ""
        var begin = 0
        for (i, chunk) in (tags + ["O"]).enumerated() {
            let tag = chunk.first ?? "O"
            let rest = chunk.dropFirst()
            var type = rest.firstIndex(of: "-").map { String(rest[rest.index(after: $0)...]) } ?? String(rest)
            if type.isEmpty { type = "_" }
            if endOfChunk(previousTag, tag, previousType, type) {
                chunks.append(Span(type: previousType, start: begin, end: i - 1))
            }
            if startOfChunk(previousTag, tag, previousType, type) { begin = i }
            previousTag = tag
            previousType = type
        }
        return chunks
    }

    static func endOfChunk(_ p: Character, _ t: Character, _ pType: String, _ type: String) -> Bool {
        if p == "E" || p == "S" { return true }
        if (p == "B" || p == "I") && (t == "B" || t == "S" || t == "O") { return true }
        return p != "O" && p != "." && pType != type
    }

    static func startOfChunk(_ p: Character, _ t: Character, _ pType: String, _ type: String) -> Bool {
        if t == "B" || t == "S" { return true }
        if (p == "E" || p == "S" || p == "O") && (t == "E" || t == "I") { return true }
        return t != "O" && t != "." && pType != type
    }

    /// Micro-averaged and per-type precision, recall and F1 of `predicted` against `truth` (same sentences, same
    /// lengths); 0 where a denominator is 0 (seqeval's zero_division default).
    public static func evaluate(truth: [[String]], predicted: [[String]]) -> EntityReport {
        var trueByType: [String: Set<Span>] = [:], predictedByType: [String: Set<Span>] = [:]
        for e in entities(truth) { trueByType[e.type, default: []].insert(e) }
        for e in entities(predicted) { predictedByType[e.type, default: []].insert(e) }
        let types = Set(trueByType.keys).union(predictedByType.keys).sorted()
        var perType: [ClassMetrics] = []
        var tpSum = 0, predSum = 0, trueSum = 0
        for type in types {
            let t = trueByType[type] ?? [], p = predictedByType[type] ?? []
            let tp = t.intersection(p).count
            tpSum += tp; predSum += p.count; trueSum += t.count
            let (precision, recall, f1) = prf(tp: tp, predicted: p.count, actual: t.count)
            perType.append(ClassMetrics(label: type, precision: precision, recall: recall, f1: f1, support: t.count))
        }
        let (p, r, f) = prf(tp: tpSum, predicted: predSum, actual: trueSum)
        return EntityReport(precision: p, recall: r, f1: f, trueEntities: trueSum, predictedEntities: predSum,
                            correctEntities: tpSum, perType: perType)
    }

    static func prf(tp: Int, predicted: Int, actual: Int) -> (Double, Double, Double) {
        let p = predicted > 0 ? Double(tp) / Double(predicted) : 0
        let r = actual > 0 ? Double(tp) / Double(actual) : 0
        let f = p + r > 0 ? 2 * p * r / (p + r) : 0
        return (p, r, f)
    }

    /// "bioes" when every tag is O or starts with B-, I-, E- or S- and some use E- or S-; "bio" when every tag is
    /// O, B-… or I-… and some are not O; nil otherwise.
    public static func scheme(of tags: [String]) -> String? {
        var sawEntity = false, sawES = false
        for tag in tags where tag != "O" {
            guard tag.count > 2, let first = tag.first, "BIES".contains(first),
                  tag[tag.index(after: tag.startIndex)] == "-" else { return nil }
            sawEntity = true
            if first == "E" || first == "S" { sawES = true }
        }
        return sawEntity ? (sawES ? "bioes" : "bio") : nil
    }
}

/// Entity-level scores (`EntityMetrics.evaluate`). JSON keys are stable.
public struct EntityReport: Codable, Equatable, Sendable {
    /// Micro averages over all entities.
    public var precision: Double
    public var recall: Double
    public var f1: Double
    public var trueEntities: Int
    public var predictedEntities: Int
    public var correctEntities: Int
    /// Per entity type, sorted by type; support = true entities of the type.
    public var perType: [ClassMetrics]
}
