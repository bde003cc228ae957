import MLToolData

/// Every setting of word-tagger training, with its default (the only place defaults live).
public struct WordTaggerParameters: Sendable, Equatable {
    /// Passes over the training sentences at most.
    public var epochs: Int = 12
    /// Stop when validation accuracy has not improved for this many epochs (nil: run every epoch). The model keeps
    /// the epoch with the best validation accuracy.
    public var patience: Int? = 3
    /// The validation split taken from the training sentences when no validation corpus is given.
    public var validation: ValidationRule = .auto
    /// Shuffles the sentences of every epoch and picks the validation split.
    public var seed: UInt64 = 42
    /// Features seen fewer times in training are left out.
    public var minFeatureCount: Int = 1
    /// Tag-set features (the tags a word was seen with) are computed for each training sentence without the
    /// sentences of its own fold, so that they look like they will on new text.
    public var lexiconFolds: Int = 10
    /// Brown clusters learned from the unlabelled sentences given to training (the tree's leaves).
    public var wordClusters: Int = 128
    /// Unlabelled words seen fewer times get no cluster.
    public var clusterMinCount: Int = 2

    public init() {}

    /// Throws unless every field is in its domain.
    public func validate() throws {
        guard epochs >= 1 else { throw TaggerError.invalidParameter(name: "epochs", value: "\(epochs)", expected: "≥ 1") }
        if let p = patience, p < 1 {
            throw TaggerError.invalidParameter(name: "patience", value: "\(p)", expected: "≥ 1 or none")
        }
        guard minFeatureCount >= 1 else {
            throw TaggerError.invalidParameter(name: "minFeatureCount", value: "\(minFeatureCount)", expected: "≥ 1")
        }
        guard wordClusters >= 2 else {
            throw TaggerError.invalidParameter(name: "wordClusters", value: "\(wordClusters)", expected: "≥ 2")
        }
        guard clusterMinCount >= 1 else {
            throw TaggerError.invalidParameter(name: "clusterMinCount", value: "\(clusterMinCount)", expected: "≥ 1")
        }
        guard lexiconFolds >= 2 else {
            throw TaggerError.invalidParameter(name: "lexiconFolds", value: "\(lexiconFolds)", expected: "≥ 2")
        }
    }
}

/// What one training epoch measured.
public struct TaggerEpoch: Sendable, Equatable {
    public var epoch: Int
    /// Words tagged right during the epoch, before each sentence's update.
    public var trainAccuracy: Double
    /// Token accuracy of the averaged model on the validation sentences (nil without any).
    public var validationAccuracy: Double?
    /// Seconds since training started.
    public var seconds: Double
}
