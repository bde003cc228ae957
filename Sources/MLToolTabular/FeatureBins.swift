/// Quantile binning: each feature's values become bins 1…n (n ≤ `maxBins`), bin 0 holds the missing ones. A numeric
/// bin k holds the values v with bounds[k − 2] < v ≤ bounds[k − 1] (binary32 comparisons, the ones prediction makes),
/// bounds being midpoints between neighbouring distinct values; a categorical bin is the category's index + 1.
public struct FeatureBins: Sendable {
    /// Per feature: the upper bounds of bins 1…n − 1 (numeric), or nil (categorical).
    public var bounds: [[Float]?]
    /// Per feature: bins including the missing bin 0.
    public var counts: [Int]

    /// The most distinct values a sample for quantiles holds per feature (rows are taken at an even stride).
    public static let sampleRows = 200_000

    /// Bins for `matrix`'s features; `categorical[f]` says which are categorical (their indices must be < maxBins).
    public init(matrix: FeatureMatrix, categorical: [Bool], maxBins: Int) {
        precondition(maxBins >= 2 && maxBins <= 255, "maxBins is 2…255")
        var bounds: [[Float]?] = [], counts: [Int] = []
        let stride = max(1, matrix.rowCount / Self.sampleRows)
        for (f, column) in matrix.columns.enumerated() {
            if categorical[f] {
                let top = column.reduce(-1) { $1.isNaN ? $0 : max($0, Int($1)) }
                bounds.append(nil); counts.append(min(top + 1, maxBins) + 1)
                continue
            }
            let (sample, distinct) = Self.sortedSample(column, stride: stride)
            var b: [Float] = []
            if distinct.count <= maxBins {
                for i in 0..<max(distinct.count - 1, 0) { b.append(Self.midpoint(distinct[i], distinct[i + 1])) }
            } else {
                // Cut at the sample's quantiles, each cut between a value and the next larger distinct value.
                for q in 1..<maxBins {
                    let v = sample[q * sample.count / maxBins]
                    var lo = 0, hi = distinct.count
                    while lo < hi { let mid = (lo + hi) / 2; if distinct[mid] <= v { lo = mid + 1 } else { hi = mid } }
                    guard lo < distinct.count else { continue }
                    let cut = Self.midpoint(distinct[lo - 1], distinct[lo])
                    if b.last.map({ $0 < cut }) ?? true { b.append(cut) }
                }
            }
            bounds.append(b); counts.append(b.count + 2)
        }
        self.bounds = bounds; self.counts = counts
    }

    /// The column's non-missing values at `stride`, sorted, and its distinct values (of values equal as numbers, −0
    /// and +0, the first met). A column of small whole numbers (pixels, counts: every value 0…65,535, no −0) is
    /// counted instead of sorted, which gives the same arrays.
    static func sortedSample(_ column: [Float], stride: Int) -> (sample: [Float], distinct: [Float]) {
        var sample: [Float] = []
        sample.reserveCapacity(column.count / stride + 1)
        for i in Swift.stride(from: 0, to: column.count, by: stride) where !column[i].isNaN { sample.append(column[i]) }
        if sample.allSatisfy({ Self.isSmallWholeNumber($0) && $0.sign == .plus }) {
            var counts = [Int](repeating: 0, count: Int(sample.max() ?? 0) + 1)
            for v in sample { counts[Int(v)] += 1 }
            var i = 0, distinct: [Float] = []
            for (v, count) in counts.enumerated() where count > 0 {
                distinct.append(Float(v))
                for j in i..<(i + count) { sample[j] = Float(v) }
                i += count
            }
            return (sample, distinct)
        }
        return sorting(sample)
    }

    /// A whole number 0…65,535 (−0 included), the values both counted paths take.
    static func isSmallWholeNumber(_ v: Float) -> Bool { v >= 0 && v < 65_536 && v == v.rounded(.towardZero) }

    /// The sorted sample and its distinct values by sorting (the reference of the counted path).
    static func sorting(_ values: [Float]) -> (sample: [Float], distinct: [Float]) {
        let sample = values.sorted()
        var distinct: [Float] = []
        for v in sample where distinct.last != v { distinct.append(v) }
        return (sample, distinct)
    }

    /// A threshold between a < b that both sides keep in binary32.
    static func midpoint(_ a: Float, _ b: Float) -> Float {
        let m = a / 2 + b / 2
        return m >= b ? a : m < a ? a : m
    }

    /// The bin of value `v` of feature `f`.
    @inline(__always)
    public func bin(_ f: Int, _ v: Float) -> UInt8 {
        if v.isNaN { return 0 }
        guard let b = bounds[f] else {
            let c = Int(v)
            return c >= 0 && c + 1 < counts[f] ? UInt8(c + 1) : 0
        }
        var lo = 0, hi = b.count
        while lo < hi { let mid = (lo + hi) >> 1; if v <= b[mid] { hi = mid } else { lo = mid + 1 } }
        return UInt8(lo + 1)
    }

    /// Every value of `matrix` as its bin, feature-major ([f · rows + r]). A numeric column of small whole numbers
    /// (every value missing or 0…65,535) looks its bins up in a table of `bin`'s answers for each whole number.
    public func binned(_ matrix: FeatureMatrix) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: matrix.rowCount * matrix.columns.count)
        for (f, column) in matrix.columns.enumerated() {
            let base = f * matrix.rowCount
            if bounds[f] != nil, column.allSatisfy({ $0.isNaN || Self.isSmallWholeNumber($0) }) {
                let top = column.reduce(0) { $1.isNaN ? $0 : max($0, Int($1)) }
                let table = (0...top).map { bin(f, Float($0)) }
                for (r, v) in column.enumerated() { out[base + r] = v.isNaN ? 0 : table[Int(v)] }
            } else {
                for (r, v) in column.enumerated() { out[base + r] = bin(f, v) }
            }
        }
        return out
    }
}
