import Dispatch
import Foundation
import MLToolCore

extension TermCorpus {
    /// The rows of the documents at `indices`: bit-identical to `fitted.vectorizer.transform` of their texts.
    /// Above 4096 documents, two halves are built side by side and joined.
    public func rows(_ indices: [Int], _ fitted: Fitted) -> CSRMatrix {
        guard indices.count >= 4096 else { return rows(indices[...], fitted) }
        let half = indices.count / 2
        let parts = Slots<CSRMatrix>(count: 2)
        DispatchQueue.concurrentPerform(iterations: 2) { p in
            parts.set(p, rows(p == 0 ? indices[..<half] : indices[half...], fitted))
        }
        let done = parts.values
        let (a, b) = (done[0], done[1])
        var offsets = a.rowOffsets
        offsets.reserveCapacity(indices.count + 1)
        let base = a.nonZeros
        for o in b.rowOffsets.dropFirst() { offsets.append(o &+ base) }
        return CSRMatrix(unchecked: indices.count, cols: a.cols, rowOffsets: offsets, columns: a.columns + b.columns,
                         values: a.values + b.values)
    }

    func rows(_ indices: ArraySlice<Int>, _ fitted: Fitted) -> CSRMatrix {
        let v = fitted
        enum Weighting { case binary, count, tfidf }
        let weighting: Weighting = config.weighting == "binary" ? .binary : config.weighting == "count" ? .count : .tfidf
        let sublinear = config.sublinearTF, normalize = config.l2Normalize
        var longest = 0, total = 0
        for doc in indices {
            let length = documentOffsets[doc + 1] - documentOffsets[doc]
            longest = max(longest, length)
            total += length
        }
        var offsets = [Int](), columns: [Int32] = [], values: [Float] = []
        offsets.reserveCapacity(indices.count + 1)
        offsets.append(0)
        columns.reserveCapacity(total / 2)
        values.reserveCapacity(total / 2)
        // Per document: counts in a dense scratch array, the touched columns in `seen`, then sorted.
        let counts = UnsafeMutablePointer<Int32>.allocate(capacity: max(v.featureCount, 1))
        counts.initialize(repeating: 0, count: max(v.featureCount, 1))
        let seen = UnsafeMutablePointer<Int32>.allocate(capacity: max(longest, 1))
        let sortScratch = UnsafeMutablePointer<Int32>.allocate(capacity: max(longest, 1))
        let buckets = UnsafeMutablePointer<Int>.allocate(capacity: 256)
        let row = UnsafeMutablePointer<Double>.allocate(capacity: max(longest, 1))
        defer { counts.deallocate(); seen.deallocate(); sortScratch.deallocate(); buckets.deallocate(); row.deallocate() }
        termIDs.withUnsafeBufferPointer { ids in
            fitted.columnOfTerm.withUnsafeBufferPointer { columnOf in
                v.idf.withUnsafeBufferPointer { idf in
                    for doc in indices {
                        var m = 0
                        for i in documentOffsets[doc]..<documentOffsets[doc + 1] {
                            let c = columnOf[Int(ids[i])]
                            guard c >= 0 else { continue }
                            if counts[Int(c)] == 0 { seen[m] = c; m &+= 1 }
                            counts[Int(c)] &+= 1
                        }
                        sortColumns(seen, m, limit: v.featureCount, scratch: sortScratch, counts: buckets)
                        // The arithmetic of `TextVectorizer.transform`, in the same order.
                        var sq = 0.0
                        for j in 0..<m {
                            let c = Int(seen[j])
                            let tf = Double(counts[c])
                            counts[c] = 0
                            let x: Double
                            switch weighting {
                            case .binary: x = 1
                            case .count: x = tf
                            // log(1) is exactly 0: skip the call for the most common count.
                            case .tfidf: x = (sublinear ? (tf == 1 ? 1 : 1 + log(tf)) : tf) * Double(idf[c])
                            }
                            row[j] = x
                            sq += x * x
                        }
                        if normalize {
                            let norm = sq.squareRoot()
                            if norm > 0 { for j in 0..<m { row[j] = row[j] / norm } }
                        }
                        columns.append(contentsOf: UnsafeBufferPointer(start: seen, count: m))
                        for j in 0..<m { values.append(Float(row[j])) }
                        offsets.append(columns.count)
                    }
                }
            }
        }
        return CSRMatrix(unchecked: indices.count, cols: v.featureCount, rowOffsets: offsets, columns: columns,
                         values: values)
    }
}

/// Sorts the distinct values `p[0..<n]`, all in `0..<limit`, ascending: insertion sort below 32 values, else an LSD
/// radix sort on digits of up to 8 bits (as many as `limit` needs), which has no data-dependent branches.
/// `scratch` holds n values and `counts` 256.
func sortColumns(_ p: UnsafeMutablePointer<Int32>, _ n: Int, limit: Int, scratch: UnsafeMutablePointer<Int32>,
                 counts: UnsafeMutablePointer<Int>) {
    if n < 32 {
        if n < 2 { return }
        for i in 1..<n {
            let x = p[i]
            var j = i &- 1
            while j >= 0 && p[j] > x { p[j &+ 1] = p[j]; j &-= 1 }
            p[j &+ 1] = x
        }
        return
    }
    let bits = max(Int.bitWidth - (max(limit, 2) &- 1).leadingZeroBitCount, 1)
    let passes = (bits + 7) / 8, digit = (bits + passes - 1) / passes
    let buckets = 1 << digit, mask = Int32(buckets - 1)
    var src = p, dst = scratch
    for pass in 0..<passes {
        let shift = Int32(pass * digit)
        counts.initialize(repeating: 0, count: buckets)
        for i in 0..<n { counts[Int((src[i] >> shift) & mask)] &+= 1 }
        var sum = 0
        for b in 0..<buckets { let c = counts[b]; counts[b] = sum; sum &+= c }
        for i in 0..<n {
            let v = src[i], b = Int((v >> shift) & mask)
            dst[counts[b]] = v
            counts[b] &+= 1
        }
        swap(&src, &dst)
    }
    if src != p { p.update(from: src, count: n) }
}
