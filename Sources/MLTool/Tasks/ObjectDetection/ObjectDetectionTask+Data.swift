import Foundation

extension ObjectDetectionTask {
    /// Boxes per label, the first photos with their boxes, and the annotations and photos training would skip
    /// (photos whose headers do not decode, of the first `maxCheckedFiles`).
    public static func dataSummary(_ data: String) throws -> DataSummary {
        let set = try DetectionDataset.load(data)
        var s = DataSummary()
        s.badFiles = set.skipped.map(\.description)
        for image in set.images.prefix(DataSummary.maxCheckedFiles) {
            s.checkedFiles += 1
            do { _ = try ImageDecoder.size(path: image.path) } catch { s.badFiles.append(DataSummary.describe(error)) }
        }
        var counts = [String: Int]()
        for image in set.images { for o in image.objects { counts[o.label, default: 0] += 1 } }
        s.classes = set.labels.map { .init(label: $0, count: counts[$0] ?? 0, samples: []) }
        s.photos = set.images.prefix(3 * DataSummary.samplesPerClass).map {
            .init(path: $0.path, width: $0.width, height: $0.height, objects: $0.objects)
        }
        s.samplesAreFiles = true
        return s
    }
}
