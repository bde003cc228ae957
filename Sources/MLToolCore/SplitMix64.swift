/// A small seeded generator (SplitMix64): the same seed gives the same stream on every machine, which makes
/// splits, k-means initialisation and augmentation reproducible.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    /// A uniform Float in [0, 1).
    public mutating func nextUnit() -> Float { Float(next() >> 40) / Float(1 << 24) }
}

extension Array {
    /// mltool's one seeded shuffle (Fisher–Yates from the back, the swap partner `next() % (i + 1)`): splits, epoch
    /// orders and samplers all use it, so a seed means the same order everywhere and the model bytes stay fixed.
    public mutating func seededShuffle(_ rng: inout SplitMix64) {
        for i in stride(from: count - 1, to: 0, by: -1) { swapAt(i, Int(rng.next() % UInt64(i + 1))) }
    }
}

/// A seeded share of `count` items.
public enum SeededSplit {
    /// `k` of the indices `0..<n`, the first `k` after a seeded shuffle, and the rest; both in increasing order (so
    /// each side keeps the items' own order).
    public static func indices(count n: Int, taking k: Int, seed: UInt64) -> (rest: [Int], taken: [Int]) {
        guard k > 0 else { return (Array(0..<max(n, 0)), []) }
        var order = Array(0..<n)
        var rng = SplitMix64(seed: seed)
        order.seededShuffle(&rng)
        let taken = Set(order.prefix(k))
        return ((0..<n).filter { !taken.contains($0) }, (0..<n).filter(taken.contains))
    }
}
