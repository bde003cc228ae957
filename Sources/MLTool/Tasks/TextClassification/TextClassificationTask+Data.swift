import Foundation

extension TextClassificationTask {
    /// Documents per label, a few snippets of each, and the empty documents training skips.
    public static func dataSummary(_ data: String) throws -> DataSummary {
        let set = try TextDataset.load(data)
        var counts = [String: Int]()
        for item in set.items { counts[item.label, default: 0] += 1 }
        let samples = DataSummary.samples(set.items, label: \.label) { TaskOutput.snippet($0.text) }
        var s = DataSummary()
        s.classes = set.labels.map { .init(label: $0, count: counts[$0] ?? 0, samples: samples[$0] ?? []) }
        if set.skippedEmpty > 0 { s.badFiles = ["\(data): \(set.skippedEmpty) empty documents skipped"] }
        return s
    }
}
