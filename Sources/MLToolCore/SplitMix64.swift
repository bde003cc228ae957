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
