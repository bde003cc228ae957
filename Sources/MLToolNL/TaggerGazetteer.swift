import MLToolData

/// Name lists (gazetteers: classes of names such as places) as bits of the lexicon's tag-set masks, so the tag-set
/// features (templates 30–34) say "this word begins / continues a known LOC name" beside the tags it was seen with:
/// class c (classes in sorted order) sets bit 16 + 2c on the first word of each of its names and bit 17 + 2c on the
/// others (lower case, words between spaces). Tag bits stay below 16, so a tagger with a gazetteer has at most 16 tags.
public struct TaggerGazetteer: Sendable, Equatable {
    public var names: [Name]

    public struct Name: Sendable, Equatable {
        public var nameClass: String
        public var text: String
        public init(nameClass: String, text: String) { self.nameClass = nameClass; self.text = text }
    }

    public init(names: [Name]) { self.names = names }

    /// The names of a gazetteer file: lines CLASS<TAB>name (blank lines skipped; a line without a tab is an error).
    public static func read(_ path: String) throws -> TaggerGazetteer {
        var names: [Name] = []
        for (i, line) in try TextDataset.readDocument(path).split(separator: "\n", omittingEmptySubsequences: false).enumerated()
        where !line.allSatisfy(\.isWhitespace) {
            let parts = line.split(separator: "\t", maxSplits: 1)
            guard parts.count == 2, !parts[0].isEmpty else {
                throw TaggerError.unusableData(source: path, reason: "line \(i + 1): expected CLASS<TAB>name")
            }
            names.append(Name(nameClass: String(parts[0]), text: String(parts[1])))
        }
        return TaggerGazetteer(names: names)
    }

    static let firstBit: UInt32 = 16
    /// Classes at most (bits 16…29; bit 31 marks the sentinels).
    public static let maxClasses = 7
    /// Tags at most beside a gazetteer.
    public static let maxTags = 16

    /// The classes in bit order.
    public var classes: [String] { Array(Set(names.map(\.nameClass))).sorted() }

    /// The bits of every word in a name, by the hash of its lower-case form (`TaggerWord.lower`).
    func bits() throws -> [UInt64: UInt32] {
        let classes = self.classes
        guard classes.count <= Self.maxClasses else {
            throw TaggerError.invalidParameter(name: "gazetteer", value: "\(classes.count) classes",
                                               expected: "at most \(Self.maxClasses)")
        }
        let bitOf = Dictionary(uniqueKeysWithValues: classes.enumerated().map { ($1, Self.firstBit + 2 * UInt32($0)) })
        var out: [UInt64: UInt32] = [:]
        for name in names {
            guard let bit = bitOf[name.nameClass] else { continue }
            for (i, word) in name.text.split(whereSeparator: \.isWhitespace).enumerated() {
                out[TaggerWord(String(word)).lower, default: 0] |= 1 << (i == 0 ? bit : bit + 1)
            }
        }
        return out
    }
}
