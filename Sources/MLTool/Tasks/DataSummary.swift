import Foundation

/// What a data source holds, as a task reads it for training: its classes (or tags) with counts and a few samples,
/// annotated photos with their boxes, tagged sentences, and what training would skip, named as `train` names it.
/// `TaskKind.dataSummary` makes one; `mltool studio`'s data view shows it.
public struct DataSummary: Codable, Sendable, Equatable {
    /// One class (or tag): how many items (objects, tokens) carry it, and a few of them.
    public struct DataClass: Codable, Sendable, Equatable {
        public var label: String
        public var count: Int
        /// Image or audio file paths when `samplesAreFiles`, else text snippets.
        public var samples: [String]
    }

    /// A photo with its labelled boxes, in pixels of the photo, origin top-left (as `predict --json` gives boxes).
    public struct AnnotatedPhoto: Codable, Sendable, Equatable {
        public var path: String
        public var width: Int
        public var height: Int
        public var objects: [ObjectAnnotation]
    }

    /// A sentence as its words and their tags.
    public struct TaggedWords: Codable, Sendable, Equatable {
        public var words: [String]
        public var tags: [String]
    }

    /// A table's column as tabular training reads it, and what it would be as the --target.
    public struct TableColumn: Codable, Sendable, Equatable {
        public var name: String
        /// "numeric" (every present field a number) or "categorical".
        public var kind: String
        public var missing: Int
        public var distinct: Int
        public var min: Double?
        public var max: Double?
        public var mean: Double?
        /// The most frequent values, "value (count)", at most `samplesPerClass` (categorical columns).
        public var top: [String]
        /// As the target: "regression", "N classes", or why it cannot be one.
        public var asTarget: String
    }

    public var classes: [DataClass] = []
    /// A table's columns (tabular data) and its row count.
    public var columns: [TableColumn] = []
    public var rows = 0
    /// Whether the classes' samples are files (images, recordings) rather than texts.
    public var samplesAreFiles = false
    public var photos: [AnnotatedPhoto] = []
    public var sentences: [TaggedWords] = []
    /// What training would skip, each with its reason.
    public var badFiles: [String] = []
    /// Files whose headers were checked (images; at most `maxCheckedFiles`).
    public var checkedFiles = 0
    /// What the summary leaves out for this task.
    public var note: String?

    public init() {}

    /// The most files whose headers a summary reads, and the samples it keeps per class (photos and sentences: 3×).
    public static let maxCheckedFiles = 5000, samplesPerClass = 4

    /// The first `samplesPerClass` items of each label, in order.
    static func samples<Item>(_ items: [Item], label: (Item) -> String, sample: (Item) -> String) -> [String: [String]] {
        var out = [String: [String]]()
        for item in items where out[label(item), default: []].count < samplesPerClass {
            out[label(item), default: []].append(sample(item))
        }
        return out
    }

    /// An error as `mltool` prints it.
    static func describe(_ error: Error) -> String { (error as? MLToolError)?.description ?? "\(error)" }
}
