import Foundation

extension SoundClassificationTask {
    /// Recordings per class and the first few of each (the audio files training reads; other files are left out).
    public static func dataSummary(_ data: String) throws -> DataSummary {
        let set = try SoundClassifierTrainer.dataset(.path(data))
        let samples = DataSummary.samples(set.items, label: \.label, sample: \.path)
        var s = DataSummary()
        s.classes = set.counts().map { .init(label: $0.label, count: $0.count, samples: samples[$0.label] ?? []) }
        s.samplesAreFiles = true
        return s
    }
}
