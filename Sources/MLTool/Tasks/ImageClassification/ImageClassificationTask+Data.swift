import Foundation

extension ImageClassificationTask {
    /// Class counts, the first photos of each class, and the photos (of the first `maxCheckedFiles`) whose headers
    /// do not decode.
    public static func dataSummary(_ data: String) throws -> DataSummary {
        let set = try ImageDataset.load(data)
        var s = DataSummary()
        for item in set.items.prefix(DataSummary.maxCheckedFiles) {
            s.checkedFiles += 1
            do { _ = try ImageDecoder.size(path: item.path) } catch { s.badFiles.append(DataSummary.describe(error)) }
        }
        let samples = DataSummary.samples(set.items, label: \.label, sample: \.path)
        s.classes = set.counts().map { .init(label: $0.label, count: $0.count, samples: samples[$0.label] ?? []) }
        s.samplesAreFiles = true
        return s
    }
}
