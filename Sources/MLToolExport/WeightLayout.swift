import MLToolCore

/// Layout changes of stored weights between the IR (NHWC, HWIO kernels) and channel-first runtimes (NCHW, OIHW),
/// done on raw element bytes so that int8 weights stay int8.
enum WeightLayout {
    /// The IR conv kernel (KH, KW, C/groups, OC) → OIHW (OC, C/groups, KH, KW).
    static let hwioToOIHW = [3, 2, 0, 1]
    /// A rank-4 NHWC tensor → NCHW.
    static let nhwcToNCHW = [0, 3, 1, 2]
    /// A rank-4 NCHW tensor → NHWC.
    static let nchwToNHWC = [0, 2, 3, 1]
    /// NHWC axis index → NCHW axis index.
    static let nhwcAxisInNCHW = [0, 2, 3, 1]

    /// Transposes row-major elements of `width` bytes each: output dim i is input dim perm[i].
    static func transpose(_ bytes: UnsafeRawBufferPointer, shape: [Int], perm: [Int], width: Int) -> [UInt8] {
        let rank = shape.count
        let outShape = perm.map { shape[$0] }
        var inStrides = [Int](repeating: 1, count: rank)
        for i in stride(from: rank - 2, through: 0, by: -1) { inStrides[i] = inStrides[i + 1] * shape[i + 1] }
        let strides = perm.map { inStrides[$0] }   // input stride of each output dim
        let n = shape.reduce(1, *)
        var out = [UInt8](repeating: 0, count: n * width)
        var index = [Int](repeating: 0, count: rank)
        var src = 0
        out.withUnsafeMutableBytes { dst in
            for o in 0..<n {
                for b in 0..<width { dst[o &* width &+ b] = bytes[src &* width &+ b] }
                // Advance the output index (row-major) and the matching input offset.
                var d = rank - 1
                while d >= 0 {
                    index[d] += 1
                    src &+= strides[d]
                    if index[d] < outShape[d] { break }
                    src &-= strides[d] &* outShape[d]
                    index[d] = 0
                    d -= 1
                }
            }
        }
        return out
    }

    /// Float values transposed by `perm`.
    static func transpose(_ values: [Float], shape: [Int], perm: [Int]) -> [Float] {
        let bytes = values.withUnsafeBytes { transpose($0, shape: shape, perm: perm, width: 4) }
        return bytes.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    /// The output shape of a transpose.
    static func permuted(_ shape: [Int], _ perm: [Int]) -> [Int] { perm.map { shape[$0] } }
}
