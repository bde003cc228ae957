import MLToolCore

/// Seeded, stratified splits: the same items, fraction and seed give the same split on every machine.
public enum DataSplit {
    /// Splits item indices by label: in each class round(n · fraction) items are held out (but at least one stays
    /// in training), chosen by a Fisher–Yates shuffle seeded from `seed` and the label, so adding a class does not
    /// change the others. Both index lists come back in ascending order.
    public static func stratified(labels: [String], fraction: Double,
                                  seed: UInt64) throws -> (train: [Int], held: [Int]) {
        guard fraction >= 0, fraction < 1, fraction.isFinite else {
            throw DataError.invalidArgument(what: "split fraction", value: "\(fraction)", expected: "0 ≤ f < 1")
        }
        var byLabel = [String: [Int]]()
        for (i, l) in labels.enumerated() { byLabel[l, default: []].append(i) }
        var held = [Int]()
        for label in byLabel.keys.sorted() {
            var idx = byLabel[label] ?? []
            let take = min(Int((Double(idx.count) * fraction).rounded()), max(idx.count - 1, 0))
            guard take > 0 else { continue }
            var rng = SplitMix64(seed: seed ^ fnv1a(label))
            idx.seededShuffle(&rng)
            held += idx.prefix(take)
        }
        held.sort()
        let heldSet = Set(held)
        return (labels.indices.filter { !heldSet.contains($0) }, held)
    }

    /// `items` split into (train, held) by `stratified(labels:fraction:seed:)`.
    public static func stratified(_ items: [ImageItem], fraction: Double,
                                  seed: UInt64) throws -> (train: [ImageItem], held: [ImageItem]) {
        let (t, h) = try stratified(labels: items.map(\.label), fraction: fraction, seed: seed)
        return (t.map { items[$0] }, h.map { items[$0] })
    }

    private static func fnv1a(_ s: String) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in s.utf8 { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        return h
    }
}
