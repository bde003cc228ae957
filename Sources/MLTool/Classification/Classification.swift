/// One class and how confident a classifier is in it (Vision's `VNClassificationObservation`: `identifier`,
/// `confidence`), with the class's index in the model's output.
public struct Classification: Sendable, Equatable, Hashable {
    /// The class label (the index as text when the model has no labels).
    public let identifier: String
    /// The probability the model gives this class, 0…1.
    public let confidence: Float
    /// The position of this class in the model's output.
    public let index: Int

    public init(identifier: String, confidence: Float, index: Int) {
        self.identifier = identifier; self.confidence = confidence; self.index = index
    }

    /// The classes of one probability row, most confident first (lower index first on ties), filtered by `options`.
    public static func ranked(_ row: [Float], labels: [String], options: ClassificationOptions = .init()) -> [Classification] {
        let order = row.indices.sorted { row[$0] != row[$1] ? row[$0] > row[$1] : $0 < $1 }
        var out = [Classification]()
        for i in order where row[i] >= options.minimumConfidence {
            if let k = options.maximumCount, out.count >= k { break }
            out.append(Classification(identifier: i < labels.count ? labels[i] : String(i), confidence: row[i], index: i))
        }
        return out
    }
}

/// Which classes a classification returns.
public struct ClassificationOptions: Sendable, Equatable {
    /// At most this many classes, most confident first (nil: all).
    public var maximumCount: Int?
    /// Only classes at least this confident.
    public var minimumConfidence: Float

    public init(maximumCount: Int? = nil, minimumConfidence: Float = 0) {
        self.maximumCount = maximumCount; self.minimumConfidence = minimumConfidence
    }
}
