import MLToolCore

/// k-means palettization: each group of output channels (or the whole tensor) gets a look-up table of 2^bits
/// floats, and every weight is stored as the packed index of its nearest entry (Core's `PackedBits` layout).
public enum Palettizer {
    /// With `channelAxis`, every slice along it is first divided by its largest magnitude (kept as a per-channel
    /// scale, rounded up to bfloat16 as stored), so one table of normalised values serves channels whose ranges
    /// differ by orders of magnitude.
    public static func palettize(_ t: StoredTensor, values original: [Float], bits: Int, axis requestedAxis: Int?,
                                 groupSize: Int?, seed: UInt64, channelAxis: Int? = nil) throws -> StoredTensor {
        var w = original
        var scales: [Float]?
        let axis = requestedAxis ?? channelAxis
        if let ca = channelAxis {
            let (o, ch, inn) = LinearQuantizer.split(t.shape, ca)
            var s = [Float](repeating: 0, count: ch)
            var i = 0
            for _ in 0..<o { for c in 0..<ch { for _ in 0..<inn { s[c] = max(s[c], abs(w[i])); i += 1 } } }
            s = s.map { $0 > 0 ? LinearQuantizer.bfloat16Up($0) : 1 }
            i = 0
            for _ in 0..<o { for c in 0..<ch { for _ in 0..<inn { w[i] /= s[c]; i += 1 } } }
            scales = s
        }
        let (outer, channels, inner) = LinearQuantizer.split(t.shape, axis)
        let g = requestedAxis == nil ? max(channels, 1) : max(1, groupSize ?? 1)
        let groups = (channels + g - 1) / g
        let k = 1 << bits
        var lut = [Float](repeating: 0, count: groups * k)
        var indices = [Int](repeating: 0, count: w.count)
        for group in 0..<groups {
            // Gather the group's elements (strided along the channel axis).
            var members = [Int]()
            for o in 0..<outer {
                for c in (group * g)..<min(channels, (group + 1) * g) {
                    let base = (o * channels + c) * inner
                    members.append(contentsOf: base..<(base + inner))
                }
            }
            let values = members.map { w[$0] }
            let (centroids, assignment) = KMeans1D.fit(values, k: k, seed: seed &+ UInt64(group))
            for j in 0..<k { lut[group * k + j] = centroids[j] }
            for (m, idx) in zip(members, assignment) { indices[m] = idx }
        }
        guard let dtype = [1: DType.palette1, 2: .palette2, 4: .palette4, 6: .palette6, 8: .palette8][bits] else {
            throw QuantError.invalidOptions("palette bits must be 1, 2, 4, 6 or 8 (got \(bits))")
        }
        return StoredTensor(name: t.name, dtype: dtype, shape: t.shape,
                            quant: QuantParams(axis: axis, scales: scales, groupSize: axis == nil ? nil : g, lut: lut,
                                                   scalesType: scales == nil ? nil : "bf16"),
                            bytes: TensorBytes(copying: PackedBits.pack(indices, bits: bits)))
    }
}

/// Exact Lloyd k-means on scalars. Sorting makes every cluster a contiguous run, so an iteration costs O(k log n)
/// with prefix sums; k-means++ seeding (seeded) picks the initial centroids.
public enum KMeans1D {
    /// Returns `k` centroids (ascending; unused entries repeat the last) and each value's centroid index.
    public static func fit(_ values: [Float], k: Int, seed: UInt64, iterations: Int = 50) -> ([Float], [Int]) {
        let n = values.count
        guard n > 0 else { return ([Float](repeating: 0, count: k), []) }
        let order = values.indices.sorted { values[$0] < values[$1] || (values[$0] == values[$1] && $0 < $1) }
        let sorted = order.map { Double(values[$0]) }
        var prefix = [Double](repeating: 0, count: n + 1)
        for i in 0..<n { prefix[i + 1] = prefix[i] + sorted[i] }
        var centroids = seedPlusPlus(sorted, k: k, seed: seed)
        var starts = [Int]()
        for _ in 0..<iterations {
            // Cluster j owns the sorted run between the midpoints to its neighbours.
            starts = [0]
            for j in 1..<centroids.count {
                starts.append(lowerBound(sorted, (centroids[j - 1] + centroids[j]) / 2, from: starts[j - 1]))
            }
            var moved = false
            for j in 0..<centroids.count {
                let s = starts[j], e = j + 1 < centroids.count ? starts[j + 1] : n
                guard e > s else { continue }
                let m = (prefix[e] - prefix[s]) / Double(e - s)
                if m != centroids[j] { centroids[j] = m; moved = true }
            }
            centroids.sort()
            if !moved { break }
        }
        starts = [0]
        for j in 1..<centroids.count {
            starts.append(lowerBound(sorted, (centroids[j - 1] + centroids[j]) / 2, from: starts[j - 1]))
        }
        var assignment = [Int](repeating: 0, count: n)
        for j in 0..<centroids.count {
            let s = starts[j], e = j + 1 < centroids.count ? starts[j + 1] : n
            for p in s..<max(s, e) { assignment[order[p]] = j }
        }
        var lut = centroids.map { Float($0) }
        while lut.count < k { lut.append(lut.last ?? 0) }
        return (lut, assignment)
    }

    /// k-means++ on sorted scalars: the first centre uniformly, each next one with probability ∝ D².
    /// Fewer distinct values than k gives exactly the distinct values.
    static func seedPlusPlus(_ sorted: [Double], k: Int, seed: UInt64) -> [Double] {
        var distinct = [Double]()
        for v in sorted where distinct.last != v { distinct.append(v) }
        if distinct.count <= k { return distinct }
        var rng = SplitMix64(seed: seed)
        var centres = [sorted[Int(rng.next() % UInt64(sorted.count))]]
        var d2 = sorted.map { ($0 - centres[0]) * ($0 - centres[0]) }
        while centres.count < k {
            let total = d2.reduce(0, +)
            guard total > 0 else { break }
            var r = Double(rng.next() >> 11) / Double(1 << 53) * total
            var pick = sorted.count - 1
            for i in 0..<sorted.count { r -= d2[i]; if r < 0 { pick = i; break } }
            let c = sorted[pick]
            centres.append(c)
            for i in 0..<sorted.count { d2[i] = min(d2[i], (sorted[i] - c) * (sorted[i] - c)) }
        }
        return centres.sorted()
    }

    static func lowerBound(_ a: [Double], _ x: Double, from: Int) -> Int {
        var lo = from, hi = a.count
        while lo < hi { let mid = (lo + hi) / 2; if a[mid] < x { lo = mid + 1 } else { hi = mid } }
        return lo
    }
}
