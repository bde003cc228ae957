import MLToolCore

/// A constant tensor of an ONNX graph (an initializer, a Constant node or a folded result), in ONNX layout.
///
/// Values are held as Double so that float, f16, f64 and int64 shape arithmetic share one path (integers up to 2^53
/// are exact). `Double.nan` marks a dimension that is only known at run time (the batch): arithmetic keeps it NaN,
/// and Reshape turns it back into "copy / infer".
struct ONNXConstant: Equatable {
    var shape: [Int]
    var values: [Double]
    /// True for integer and bool element types (shape arithmetic); false for floating point.
    var isInteger: Bool
    /// The ONNX data_type it was read with (0 when computed): QuantizeLinear saturates to its zero point's type.
    var dataType: Int32 = 0
    /// Set when the values are a folded DequantizeLinear of int8 codes: they are then stored as int8 again.
    var quant: Quant?

    /// Linear int8 quantization of a constant: value = scales[c] · (code − zeroPoints[c]), c the index along `axis`
    /// (one scale for the whole tensor when `axis` is nil). With `lut` set it is a palette instead: every value is
    /// an entry of the table of its group (`lutBits` bits per index; groups of `groupSize` slices along `axis`, one
    /// table for the whole tensor when `axis` is nil), and `scales` / `zeroPoints` are unused.
    struct Quant: Equatable {
        var axis: Int?
        var scales: [Float]
        var zeroPoints: [Int]
        var lut: [Float]? = nil
        var lutBits = 0
        var groupSize = 1
    }

    init(shape: [Int], values: [Double], isInteger: Bool = false) {
        self.shape = shape; self.values = values; self.isInteger = isInteger
    }

    var rank: Int { shape.count }
    var floats: [Float] { values.map { Float($0) } }
    /// Integer values (NaN, the unknown dimension, becomes nil).
    var ints: [Int?] {
        values.map { v in v.isNaN ? nil : (v >= 9.2e18 ? Int.max : (v <= -9.2e18 ? Int.min : Int(v))) }
    }

    /// The scalar value, when the constant holds exactly one element.
    var scalar: Double? { values.count == 1 ? values[0] : nil }

    /// The values permuted as `perm` permutes the axes: output axis i is input axis perm[i].
    func transposed(_ perm: [Int]) -> ONNXConstant {
        let outShape = perm.map { shape[$0] }
        var inStrides = [Int](repeating: 1, count: rank)
        var s = 1
        for i in stride(from: rank - 1, through: 0, by: -1) { inStrides[i] = s; s *= shape[i] }
        let permStrides = perm.map { inStrides[$0] }
        var out = [Double](repeating: 0, count: values.count)
        var index = [Int](repeating: 0, count: rank)
        for o in 0..<values.count {
            var src = 0
            for a in 0..<rank { src += index[a] * permStrides[a] }
            out[o] = values[src]
            var a = rank - 1
            while a >= 0 {
                index[a] += 1
                if index[a] < outShape[a] { break }
                index[a] = 0
                a -= 1
            }
        }
        var t = ONNXConstant(shape: outShape, values: out, isInteger: isInteger)
        t.quant = quant
        if let a = quant?.axis { t.quant?.axis = perm.firstIndex(of: a) }
        return t
    }

    /// The slices at `indices` (each in 0..<shape[axis]) along `axis`, in that order.
    func taken(_ indices: [Int], axis: Int) -> ONNXConstant {
        let n = shape[axis]
        let outer = shape[..<axis].reduce(1, *), inner = shape[(axis + 1)...].reduce(1, *)
        var out: [Double] = []
        out.reserveCapacity(outer * indices.count * inner)
        for o in 0..<outer {
            for i in indices { out += values[((o * n + i) * inner)..<((o * n + i + 1) * inner)] }
        }
        var s = shape
        s[axis] = indices.count
        return ONNXConstant(shape: s, values: out, isInteger: isInteger)
    }

    /// The shape left-padded with 1s to `rank` (a quantization axis moves with it).
    func leftPadded(to rank: Int) -> ONNXConstant {
        guard self.rank < rank else { return self }
        var t = self
        t.shape = [Int](repeating: 1, count: rank - self.rank) + shape
        if let a = quant?.axis { t.quant?.axis = a + rank - self.rank }
        return t
    }
}

/// Axis bookkeeping between ONNX's NCHW and the IR's NHWC.
enum Layout {
    /// IR axis j of a rank-4 tensor is ONNX axis `nhwcToNchw[j]`.
    static let nhwcToNchw = [0, 2, 3, 1]
    /// ONNX axis a of a rank-4 tensor is IR axis `nchwToNhwc[a]`.
    static let nchwToNhwc = [0, 3, 1, 2]
    /// Permutation taking an NCHW tensor to NHWC (as a transpose perm).
    static let toNHWC = [0, 2, 3, 1]
    /// Permutation taking an NHWC tensor to NCHW.
    static let toNCHW = [0, 3, 1, 2]

    /// The IR axis for ONNX axis `axis` of a tensor of `rank` (rank-4 tensors are NHWC in the IR).
    static func irAxis(_ axis: Int, rank: Int) -> Int { rank == 4 ? nchwToNhwc[axis] : axis }

    /// An ONNX-layout shape as the IR stores it.
    static func irShape(_ shape: [Int]) -> [Int] { irOrder(shape) }

    /// Anything given per ONNX dimension (a name, a size) in the IR's order: NCHW → NHWC at rank 4.
    static func irOrder<T>(_ perDimension: [T]) -> [T] {
        perDimension.count == 4 ? nhwcToNchw.map { perDimension[$0] } : perDimension
    }

    /// Whether NCHW and NHWC orders of this ONNX shape hold the same bytes (C is 1 or H·W is 1).
    static func orderFree(_ shape: [Int]) -> Bool {
        shape.count != 4 || shape[1] == 1 || (shape[2] == 1 && shape[3] == 1)
    }
}
