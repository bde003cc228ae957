import MLToolCore

/// k-means palettization: each group of output channels (or the whole tensor) gets a look-up table of 2^bits
/// floats, and every weight is stored as the packed index of its nearest entry (Core's `PackedBits` layout).
public enum Palettizer {
    /// With `channelAxis`, every slice along it is first divided by its largest magnitude (kept as a per-channel
    /// scale, rounded up to bfloat16 as stored), so one table of normalised values serves channels whose ranges
    /// differ by orders of magnitude.
    ///
    /// With channel scales and at most 6 bits, the scales are then refitted: given the table and the assignment,
    /// each channel's least-squares scale is Σ w·l / Σ l², the weights are normalised again and the tables
    /// re-fitted from the previous ones (`refits` rounds). On EfficientNet-Lite0 at 4 bits: +0.1 to 0.4 dB SNR per
    /// tensor, holdout KL to the float model 0.061 → 0.050, top-1 agreement 0.922 → 0.930.
    ///
    /// With `int8Table` (needs `channelAxis`), each table is then made of integers in −127…127: its values divided
    /// by its largest magnitude / 127 and rounded, that step folded into the channel scales, every weight assigned
    /// again to the nearest entry and each channel's scale refitted by least squares (Core ML's int8 look-up
    /// table; the engine runs such a layer on its int8 kernels, with the integers as the weights).
    public static func palettize(_ t: StoredTensor, values original: [Float], bits: Int, axis requestedAxis: Int?,
                                 groupSize: Int?, seed: UInt64, channelAxis: Int? = nil,
                                 refits: Int = 3, int8Table: Bool = false) throws -> StoredTensor {
        guard let dtype = [1: DType.palette1, 2: .palette2, 4: .palette4, 6: .palette6, 8: .palette8][bits] else {
            throw QuantError.invalidOptions("palette bits must be 1, 2, 4, 6 or 8 (got \(bits))")
        }
        guard !int8Table || channelAxis != nil else {
            throw QuantError.invalidOptions("an int8 look-up table needs per-channel scales (without --per-tensor)")
        }
        let axis = requestedAxis ?? channelAxis
        let (outer, channels, inner) = LinearQuantizer.split(t.shape, axis)
        let g = requestedAxis == nil ? max(channels, 1) : max(1, groupSize ?? 1)
        let groups = (channels + g - 1) / g
        let k = 1 << bits
        // Element i lies in slice (i / inner) % channels along `axis`.
        var scales = channelAxis.map { channelScales(original, t.shape, $0) }
        // Scales are per slice along `axis` too when refitting (the channel axis is the grouping axis).
        let canRefit = channelAxis != nil && channelAxis == axis && bits <= 6
        var lut = [Float](repeating: 0, count: groups * k)
        var indices = [Int](repeating: 0, count: original.count)
        // The elements each table serves: the slices of its group of channels.
        var members = [[Int]](repeating: [], count: groups)
        for group in 0..<groups {
            for o in 0..<outer {
                for c in (group * g)..<min(channels, (group + 1) * g) {
                    let base = (o * channels + c) * inner
                    members[group].append(contentsOf: base..<(base + inner))
                }
            }
        }
        for round in 0...(canRefit ? max(0, refits) : 0) {
            var w = original
            if let s = scales, let ca = channelAxis {
                let (o, ch, inn) = LinearQuantizer.split(t.shape, ca)
                var i = 0
                for _ in 0..<o { for c in 0..<ch { for _ in 0..<inn { w[i] /= s[c]; i += 1 } } }
            }
            for group in 0..<groups {
                let values = members[group].map { w[$0] }
                let start = round == 0 ? nil : Array(lut[(group * k)..<((group + 1) * k)])
                let (centroids, assignment) = KMeans1D.fit(values, k: k, seed: seed &+ UInt64(group), initial: start)
                for j in 0..<k { lut[group * k + j] = centroids[j] }
                for (m, idx) in zip(members[group], assignment) { indices[m] = idx }
            }
            guard canRefit, round < refits, var s = scales else { break }
            let (num, den) = leastSquares(original, channels: channels, lut: lut, indices: indices) { i in
                let c = (i / inner) % channels
                return (c, (c / g) * k)
            }
            for c in 0..<channels where den[c] > 0 && num[c] > 0 {
                s[c] = QuantParams.bfloat16Rounded(Float(num[c] / den[c]))
            }
            scales = s
        }
        if int8Table, let ca = channelAxis, let s = scales {
            scales = integerTables(original, t.shape, channelAxis: ca, groupSize: g, k: k, scales: s, lut: &lut, indices: &indices)
        }
        return StoredTensor(name: t.name, dtype: dtype, shape: t.shape,
                            quant: QuantParams(axis: axis, scales: scales, groupSize: axis == nil ? nil : g, lut: lut,
                                                   scalesType: scales == nil ? nil : "bf16"),
                            bytes: TensorBytes(copying: PackedBits.pack(indices, bits: bits)))
    }
}

extension Palettizer {
    /// Each slice's largest magnitude along `axis`, rounded up to bfloat16 (1 for an all-zero slice).
    static func channelScales(_ original: [Float], _ shape: [Int], _ axis: Int) -> [Float] {
        let (o, ch, inn) = LinearQuantizer.split(shape, axis)
        var s = [Float](repeating: 0, count: ch)
        var i = 0
        for _ in 0..<o { for c in 0..<ch { for _ in 0..<inn { s[c] = max(s[c], abs(original[i])); i += 1 } } }
        return s.map { $0 > 0 ? LinearQuantizer.bfloat16Up($0) : 1 }
    }

    /// The tables made of integers in −127…127 (their steps folded into the channel scales), every weight assigned
    /// again to the nearest entry and each channel's scale refitted by least squares; the new scales.
    static func integerTables(_ original: [Float], _ shape: [Int], channelAxis ca: Int, groupSize g: Int, k: Int, scales: [Float],
                              lut: inout [Float], indices: inout [Int]) -> [Float] {
        var s = scales
        let groups = lut.count / k
        // Channel slices along `ca`, which is `axis` here: channel c reads table c / g.
        let (_, ch, inn) = LinearQuantizer.split(shape, ca)
        let place = { (i: Int) in let c = (i / inn) % ch; return (c, (c / g) * k) }
        // Each table's step, folded into the scales of the channels that read it.
        var step = [Float](repeating: 1, count: groups)
        for group in 0..<groups {
            let m = lut[(group * k)..<((group + 1) * k)].map(abs).max() ?? 0
            guard m > 0 else { continue }
            step[group] = m / 127
            for j in 0..<k { lut[group * k + j] = (lut[group * k + j] / step[group]).rounded() }
        }
        // Each channel's unit: its scale times its table's step, then (second pass) its refitted scale; the
        // weights are assigned again in the final units, so each is the nearest entry as stored.
        var unit = (0..<ch).map { Double(s[$0]) * Double(step[$0 / g]) }
        let ascending = (0..<groups).map { group in
            let table = lut[(group * k)..<((group + 1) * k)]
            return zip(table, table.dropFirst()).allSatisfy { $0 <= $1 }
        }
        for pass in 0..<2 {
            for i in original.indices {
                let (c, base) = place(i)
                indices[i] = nearest(lut[base..<(base + k)], to: Double(original[i]) / unit[c], ascending: ascending[c / g])
            }
            guard pass == 0 else { break }
            let (num, den) = leastSquares(original, channels: ch, lut: lut, indices: indices, place)
            for c in 0..<ch {
                // The least-squares scale for these integers (Σ w·l / Σ l²), as stored (bfloat16).
                let refit = QuantParams.bfloat16Rounded(Float(den[c] > 0 && num[c] > 0 ? num[c] / den[c] : unit[c]))
                s[c] = refit > 0 && refit.isFinite ? refit : 1
                unit[c] = Double(s[c])
            }
        }
        return s
    }

    /// Per channel, Σ w·l and Σ l² over the weights of `original` and the table entries they are assigned
    /// (`place(i)`: element i's channel and the offset of its table in `lut`): the least-squares scale of channel c
    /// for its entries is num[c] / den[c]. Summed in element order.
    static func leastSquares(_ original: [Float], channels: Int, lut: [Float], indices: [Int],
                             _ place: (Int) -> (channel: Int, table: Int)) -> (num: [Double], den: [Double]) {
        var num = [Double](repeating: 0, count: channels), den = [Double](repeating: 0, count: channels)
        for i in original.indices {
            let (c, base) = place(i)
            let l = Double(lut[base + indices[i]])
            num[c] += Double(original[i]) * l
            den[c] += l * l
        }
        return (num, den)
    }

    /// The offset in `table` of the entry nearest to `target`, the first of equals on a tie (what a linear scan
    /// finds). An `ascending` table (k-means sorts its centroids, and rounding to integers keeps the order) takes
    /// two binary searches; any other is scanned.
    static func nearest(_ table: ArraySlice<Float>, to target: Double, ascending: Bool) -> Int {
        let start = table.startIndex, end = table.endIndex
        guard ascending else {
            var best = start, bestDist = Double.infinity
            for j in table.indices where abs(Double(table[j]) - target) < bestDist {
                bestDist = abs(Double(table[j]) - target); best = j
            }
            return best - start
        }
        // The first index whose entry is ≥ value (`below`: whose entry is not below it).
        func firstNotBelow(_ value: Double) -> Int {
            var lo = start, hi = end
            while lo < hi {
                let mid = (lo + hi) / 2
                if Double(table[mid]) < value { lo = mid + 1 } else { hi = mid }
            }
            return lo
        }
        let upper = firstNotBelow(target)
        var best = end, bestDist = Double.infinity
        if upper > start {
            // The first of the entries equal to the one just below the target.
            best = firstNotBelow(Double(table[upper - 1]))
            bestDist = target - Double(table[upper - 1])
        }
        if upper < end && Double(table[upper]) - target < bestDist { best = upper }
        return best - start
    }
}

/// Exact Lloyd k-means on scalars. Sorting makes every cluster a contiguous run, so an iteration costs O(k log n)
/// with prefix sums; k-means++ seeding (seeded) picks the initial centroids.
public enum KMeans1D {
    /// Returns `k` centroids (ascending; unused entries repeat the last) and each value's centroid index.
    /// `initial` (k values) replaces the k-means++ seeding, e.g. the table of a previous fit.
    public static func fit(_ values: [Float], k: Int, seed: UInt64, iterations: Int = 50,
                           initial: [Float]? = nil) -> ([Float], [Int]) {
        let n = values.count
        guard n > 0 else { return ([Float](repeating: 0, count: k), []) }
        let order = values.indices.sorted { values[$0] < values[$1] || (values[$0] == values[$1] && $0 < $1) }
        let sorted = order.map { Double(values[$0]) }
        var prefix = [Double](repeating: 0, count: n + 1)
        for i in 0..<n { prefix[i + 1] = prefix[i] + sorted[i] }
        var centroids = initial.map { Array(Set($0.map(Double.init))).sorted() } ?? seedPlusPlus(sorted, k: k, seed: seed)
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
