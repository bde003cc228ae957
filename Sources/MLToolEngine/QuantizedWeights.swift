import CMLToolKernels
import MLToolCore

/// A conv or dense weight stored as symmetric linear int8 per output channel (what `mltool quantize --bits 8`
/// writes), packed once for `mlk_qgemm`: the int8 values in 16-column panels, each column's sum, and each column's
/// scale. The engine then runs the layer on activations quantized per row to 7 bits (see CMLToolKernels.h).
final class QuantizedWeights: @unchecked Sendable {
    /// ceil(n/16) panels of `panelBytes` bytes.
    let packed: UnsafeMutablePointer<Int8>
    /// Σ_k w[k][n] and the scale of column n, n rounded up to 16 (zero-padded).
    let colsum: UnsafeMutablePointer<Int32>
    let scales: UnsafeMutablePointer<Float>
    let k: Int
    let n: Int
    let panelBytes: Int

    /// Weights (k · n) from which `Engine.Int8Compute.auto` takes the int8 kernels. Measured per layer shape of
    /// EfficientNet-Lite0 on AVX-512 VNNI (int8 time including the input's quantization vs the float GEMM):
    /// 27×32 0.80×, 32×16 0.65×, 16×96 1.04×, 96×24 1.28×, 24×144 1.31×, … 1152×320 3.5×.
    static let autoMinimum = 2048

    /// Input channels (k) from which `.auto` takes the int8 kernels where the CPU has no VNNI (AVX2's vpmaddubsw and
    /// vpmaddwd: two multiplier instructions per 32 products, and a per-output epilogue that a short k does not
    /// amortize). Measured per layer of EfficientNet-Lite0 on a Zen 4 forced to the AVX2 level (batch 1, 1 thread,
    /// int8 vs float): k = 24 and 40 (fused expansions) 0.85×, k = 40 0.84×, 80 1.19×, 96 1.14×, 112 1.33×, 144
    /// 1.33×, 192 1.46×; with VNNI every k gains (k = 40 1.5×, 24 and 40 fused 1.13×), so there it is 1.
    static let autoMinimumKWithoutVNNI = 64

    /// Largest k for which the int32 sums (k · 127 · 128, and zp · colsum) cannot overflow.
    static let maxK = (Int(Int32.max) / (127 * 128)) - 1

    /// nil unless `t` is int8 with zero points 0 (or none), one scale per column of its last axis (or one for the
    /// whole tensor), finite scales, and exactly k · n bytes laid out as (k, n) row-major (the IR's (…, out)
    /// layout). Anything else runs through the float path, which reports bad data itself.
    convenience init?(_ t: StoredTensor, k: Int, n: Int) {
        guard t.dtype == .int8, k > 0, n > 0, k <= Self.maxK, let q = t.quant, let s = q.scales,
              t.elementCount == k &* n, t.bytes.count == k &* n,
              (q.zeroPoints ?? []).allSatisfy({ $0 == 0 }),
              (q.axis == t.shape.count - 1 && s.count == n) || (q.axis == nil && s.count == 1),
              s.allSatisfy({ $0.isFinite }),
              let w = t.bytes.buffer.baseAddress?.assumingMemoryBound(to: Int8.self) else { return nil }
        self.init(values: w, k: k, n: n, scales: s.count == 1 ? [Float](repeating: s[0], count: n) : s)
    }

    /// A palette whose tables are integers in −127…127 (Core ML's int8 look-up table; `mltool quantize --lut int8`)
    /// and whose channel scales, if any, are per column of the last axis: each weight is then exactly
    /// scales[c] × an int8 value (`StoredTensor.int8TableValues`), and the layer runs on the int8 kernels with
    /// those values, nothing rounded. nil for any other tensor, or short bytes (the float path reports them).
    convenience init?(int8Table t: StoredTensor, k: Int, n: Int) {
        // Packed from the values straight away: a linear copy of the tensor first would leave the heap holding
        // another int8 copy of the model (measured: 1.5 MiB more resident for EfficientNet-Lite0).
        guard k <= Self.maxK, let (values, scales) = t.int8TableValues(), values.count == k &* n, scales.count == n
        else { return nil }
        self.init(values: values, k: k, n: n, scales: scales)
    }

    /// Float weights (k, n) as int8, symmetric per column: scale max |w| / 127, each value rounded to the nearest
    /// step. For palettized weights (`mltool quantize --bits 4/6`): their few distinct values land within half a step
    /// of the column's int8 grid, and the layer runs on the int8 kernels instead of as float. nil for a non-finite
    /// weight (the float path reports it).
    convenience init?(floats w: UnsafeBufferPointer<Float>, k: Int, n: Int) {
        guard k > 0, n > 0, k <= Self.maxK, w.count == k &* n, w.allSatisfy({ $0.isFinite }) else { return nil }
        var scales = [Float](repeating: 0, count: n)
        for r in 0..<k {
            for c in 0..<n { scales[c] = max(scales[c], abs(w[r &* n &+ c])) }
        }
        scales = scales.map { $0 > 0 ? $0 / 127 : 1 }
        var values = [Int8](repeating: 0, count: k &* n)
        for r in 0..<k {
            for c in 0..<n {
                let v = (w[r &* n &+ c] / scales[c]).rounded()
                values[r &* n &+ c] = Int8(max(-127, min(127, v)))
            }
        }
        self.init(values: values, k: k, n: n, scales: scales)
    }

    /// Packs int8 values (k, n) row-major with one scale per column.
    private init(values w: UnsafePointer<Int8>, k: Int, n: Int, scales s: [Float]) {
        self.k = k
        self.n = n
        let panels = (n + 15) / 16
        panelBytes = Int(mlk_qpanel_bytes(Int64(k)))
        packed = UnsafeMutableRawPointer.allocate(byteCount: panels &* panelBytes, alignment: 64)
            .bindMemory(to: Int8.self, capacity: panels &* panelBytes)
        colsum = .allocate(capacity: panels &* 16)
        scales = .allocate(capacity: panels &* 16)
        scales.initialize(repeating: 0, count: panels &* 16)
        for c in 0..<n { scales[c] = s[c] }
        mlk_qpack(w, Int64(k), Int64(n), packed, colsum)
    }

    deinit {
        packed.deallocate()
        colsum.deallocate()
        scales.deallocate()
    }

    /// Floats of scratch that `rows` quantized rows take: their u8 values, scales and zero points.
    static func scratchFloats(rows: Int, k: Int) -> Int {
        // Layout (see Fast.quantizedGemm): the u8 rows, rounded up to 64 bytes, then the scales, then the zero points.
        (rows &* Int(mlk_qrow_bytes(Int64(k))) &+ 63) / 64 &* 16 &+ 2 &* rows
    }
}
