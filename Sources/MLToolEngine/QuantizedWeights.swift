import CMLToolCPU
import CMLToolKernels
import MLToolCore

/// A conv or dense weight stored as symmetric linear int8 per output channel (what `mltool quantize --bits 8`
/// writes), packed once for `mlk_qgemm`: the int8 values in 16-column panels, each column's sum, and each column's
/// scale. The engine then runs the layer on activations quantized per row to 7 bits (see CMLToolKernels.h).
///
/// A 4- or 6-bit palette with int8 tables (`mltool quantize --lut int8`) keeps its indices instead (`kept`,
/// rearranged into panel order, a half or three quarters of int8's bytes) where the CPU decodes them quickly: each
/// run decodes them into the panels `mlk_qgemm` reads, in the step's scratch (`decode`), a block of columns at a time
/// when the layer has few rows, so only that block is ever written out.
final class QuantizedWeights: @unchecked Sendable {
    /// ceil(n/16) panels of `panelBytes` bytes; nil when the indices are kept (`kept`).
    let packed: UnsafeMutablePointer<Int8>?
    /// Σ_k w[k][n] and the scale of column n, n rounded up to 16 (zero-padded).
    let colsum: UnsafeMutablePointer<Int32>
    let scales: UnsafeMutablePointer<Float>
    let k: Int
    let n: Int
    let panelBytes: Int
    /// An int8-table palette's indices as `mlk_qpalette_pack` orders them, and each panel's table (2^bits values).
    let kept: (indices: UnsafeMutablePointer<UInt8>, bits: Int, tables: [Int8])?
    /// Whether the sums stay exact with 8-bit input codes (`inputCodes`): every weight in −64…64 (onnxruntime's
    /// reduce_range), a VNNI level, whose products do not pass through int16, or every weight in −127…127 with
    /// `wideWeights`.
    private(set) var takesEightBitCodes = false
    /// Whether 8-bit codes need `mlk_qgemm`'s `wide` sums to stay exact: weights outside −64…64 where the CPU has no
    /// VNNI (AVX2's vpmaddubsw would saturate a pair of products in int16; onnxruntime's U8S8 kernel does).
    private(set) var wideWeights = false
    /// The scale and (u8) zero point of the layer's input when it is a QuantizeLinear → DequantizeLinear pair's
    /// output (set once by `Program`, before any run): its rows are then those codes (`mlk_quantize_rows_fixed`), not
    /// quantized per row to 7 bits, and the sums are the integer products the ONNX file states.
    private(set) var inputCodes: (scale: Float, zeroPoint: Int32)?
    /// Whether the layer's input is a `quantize` in mode "dynamic" that the layer absorbed (set once by `Program`,
    /// before any run): each run computes that pair from the whole input (`dynamicCodes`) and reads its codes, the
    /// integer arithmetic of onnxruntime's MatMulInteger and ConvInteger.
    private(set) var readsDynamicCodes = false
    /// onnxruntime's requantization (`mlk_qgemm_requant`) when the layer reads codes and a per-tensor QuantizeLinear
    /// quantizes its output (set once by `Program`, before any run): the file's integer bias and the multipliers
    /// x_scale · w_scale[n] / y_scale (n rounded up to 16, zero-padded), the output's code range less its zero point,
    /// and its scale. The layer then writes the codes that QuantizeLinear gives, dequantized, as QLinearConv does.
    private(set) var requant: (bias: UnsafeMutablePointer<Int32>, mult: UnsafeMutablePointer<Float>, lo: Float, hi: Float,
                               scale: Float)?
    /// Whether the requantized output is stored as its 8-bit codes (`Program.storeCodes`, set once before any run):
    /// the layer writes bytes (code less the range's low end: zero point −lo) into its output's place, rows n apart.
    private(set) var writesCodes = false
    /// Whether the input is stored as 8-bit codes of `inputCodes` (`Program.storeCodes`, set once before any run): a
    /// 1×1 conv then reads them in place as its quantized rows (k a multiple of 4, so rows are `mlk_qrow_bytes` apart).
    private(set) var readsStoredCodes = false

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
    /// scales[c] × an int8 value (`StoredTensor.int8Table`), and the layer runs on the int8 kernels with those
    /// values, nothing rounded. With `keepIndices` (and `keepsIndices(bits:)`), a 4- or 6-bit palette of at least
    /// `keepMinimum` weights whose columns share one table per 16-column panel keeps its indices (`kept`); otherwise
    /// the values are packed. nil for any other tensor, or short bytes (the float path reports them).
    convenience init?(int8Table t: StoredTensor, k: Int, n: Int, keepIndices: Bool) {
        guard k <= Self.maxK, let table = t.int8Table(), table.count == k &* n, table.columns == n,
              let base = t.bytes.buffer.baseAddress else { return nil }
        let raw = t.bytes.buffer
        // Packed from the values straight away: a linear copy of the tensor first would leave the heap holding
        // another int8 copy of the model (measured: 1.5 MiB more resident for EfficientNet-Lite0).
        let panels = (n &+ 15) / 16
        // Each panel's table group, where its columns share one (nil otherwise), looked at only when the layer may keep
        // its indices.
        let keep = keepIndices && k &* n >= Self.keepMinimum && Self.keepsIndices(bits: table.bits)
        let groups: [Int?] = keep ? (0..<panels).map { p in
            let first = table.group(ofColumn: p &* 16)
            return (p &* 16..<min(n, p &* 16 &+ 16)).allSatisfy { table.group(ofColumn: $0) == first } ? first : nil
        } : []
        guard keep, groups.allSatisfy({ $0 != nil }) else {
            self.init(values: (0..<table.count).map { table.value(raw, $0) }, k: k, n: n, scales: table.scales)
            return
        }
        let entries = 1 << table.bits
        let tables = groups.flatMap { g in table.lut[(g ?? 0) &* entries..<((g ?? 0) &+ 1) &* entries] }
        let bytes = panels &* Int(mlk_qpalette_panel_bytes(Int64(k), Int32(table.bits)))
        let indices = UnsafeMutablePointer<UInt8>.allocate(capacity: bytes)
        guard mlk_qpalette_pack(base.assumingMemoryBound(to: UInt8.self), Int64(raw.count), Int32(table.bits),
                                Int64(k), Int64(n), indices) != 0 else { indices.deallocate(); return nil }
        self.init(kept: (indices, table.bits, tables), k: k, n: n, scales: table.scales)
    }

    /// Whether an int8-table palette of `bits` keeps its indices at the current CPU level: where `mlk_qpalette_unpack`
    /// has a vector variant (AVX2 and up), at 4 and 6 bits. Decoding a 64-weight group costs 6 (4 bits) or 14
    /// (6 bits) AVX2 instructions, against the 2 per 32 products per row the int8 GEMM spends on it.
    static func keepsIndices(bits: Int) -> Bool { (bits == 4 || bits == 6) && mlk_cpu_has(Int32(MLK_CPU_AVX2)) != 0 }

    /// Weights from which an int8-table palette keeps its indices: smaller layers (a CNN's first, whose many rows
    /// would decode them for every image and which an expansion fuses with its depthwise conv only when packed:
    /// `Fused.fusable`) are packed, which for EfficientNet-Lite0 costs 30 KB.
    static let keepMinimum = 16_384

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
        let panels = (n + 15) / 16
        (self.k, self.n, kept) = (k, n, nil)
        panelBytes = Int(mlk_qpanel_bytes(Int64(k)))
        let packed = UnsafeMutableRawPointer.allocate(byteCount: panels &* panelBytes, alignment: 64)
            .bindMemory(to: Int8.self, capacity: panels &* panelBytes)
        (colsum, scales) = Self.columns(n, scales: s)
        mlk_qpack(w, Int64(k), Int64(n), packed, colsum)
        self.packed = packed
        let vnni = mlk_cpu_has(Int32(MLK_CPU_AVX512_VNNI)) != 0 || mlk_cpu_has(Int32(MLK_CPU_AVX2_VNNI)) != 0
        let narrow = vnni || (0..<(k &* n)).allSatisfy { abs(Int(w[$0])) <= 64 }
        wideWeights = !narrow
        takesEightBitCodes = k <= Int(Int32.max) / (255 * 128) && (narrow || (0..<(k &* n)).allSatisfy { w[$0] != -128 })
    }

    /// Whether a dequantized bias over its scale, `ratio`, is the integer `code` up to float32 rounding (the importer
    /// dequantized the int32 code and the scale is x_scale · w_scale in float: a few parts in 10^7 of the code).
    static func isCode(_ ratio: Float, _ code: Float) -> Bool { abs(ratio - code) <= 1e-3 + abs(code) * 1e-6 }

    /// Whether an integral float converts to Int32 (the largest float below 2^31 is 2^31 − 128).
    static func isInt32(_ code: Float) -> Bool { abs(code) <= 2_147_483_520 }

    /// Reads this layer's input as 8-bit codes of `scale` and `zeroPoint` (0…255) when its weights allow it.
    func readInputCodes(scale: Float, zeroPoint: Int32) {
        guard takesEightBitCodes, scale.isFinite, scale != 0, (0...255).contains(zeroPoint) else { return }
        inputCodes = (scale, zeroPoint)
    }

    /// The output's scale and u8 zero point when the layer requantizes it and no activation follows (what a reader of
    /// its codes must take), nil otherwise.
    var outputCodes: (scale: Float, zeroPoint: Int32)? { requant.map { ($0.scale, Int32(-$0.lo)) } }

    /// Stores the requantized output as codes (`writesCodes`); false unless the layer requantizes.
    func storeOutputCodes() -> Bool {
        guard requant != nil else { return false }
        writesCodes = true
        return true
    }

    /// Reads the input as stored codes (`readsStoredCodes`); false unless the layer reads codes of `scale` and
    /// `zeroPoint` and its rows need no padding.
    func readStoredCodes(scale: Float, zeroPoint: Int32) -> Bool {
        guard let c = inputCodes, c.scale == scale, c.zeroPoint == zeroPoint, !readsDynamicCodes,
              Int(mlk_qrow_bytes(Int64(k))) == k else { return false }
        readsStoredCodes = true
        return true
    }

    /// `mlk_qgemm`'s `wide` for the rows `quantizeRows` gives: 1 when they are 8-bit codes and the weights need it.
    var wide: Int32 { (inputCodes != nil || readsDynamicCodes) && wideWeights ? 1 : 0 }

    /// Reads this layer's input as the codes of a dynamic quantization when its weights allow exact sums; false
    /// (and nothing set) otherwise.
    func readDynamicCodes() -> Bool {
        guard takesEightBitCodes, inputCodes == nil else { return false }
        readsDynamicCodes = true
        return true
    }

    /// The pair a dynamic quantization of `count` values at `x` gives (`mlk_dynamic_quant_params`), nil unless the
    /// layer reads dynamic codes.
    func dynamicCodes(_ x: UnsafePointer<Float>, count: Int) -> (scale: Float, zeroPoint: Int32)? {
        guard readsDynamicCodes else { return nil }
        var scale: Float = 1, zp: Int32 = 0
        mlk_dynamic_quant_params(x, Int64(count), &scale, &zp)
        return (scale, zp)
    }

    /// Requantizes the output to the codes of a QuantizeLinear of `scale` and `zeroPoint` with code range `lo`…`hi`
    /// (`requant`), given the layer's float bias; false (and nothing set) unless the layer reads codes and each bias
    /// is an integer times x_scale · w_scale[n] (to float rounding: the importer dequantized a QDQ file's int32 bias)
    /// within int32's safe range.
    @discardableResult
    func requantizeOutput(bias: UnsafePointer<Float>?, scale: Float, zeroPoint: Float, lo: Float, hi: Float) -> Bool {
        guard requant == nil, let c = inputCodes, scale.isFinite, scale > 0, lo <= zeroPoint, zeroPoint <= hi,
              hi - lo <= 255 else { return false }
        let padded = (n &+ 15) / 16 &* 16
        var codes = [Int32](repeating: 0, count: padded), mult = [Float](repeating: 0, count: padded)
        for j in 0..<n {
            let s = c.scale * scales[j], b = bias?[j] ?? 0
            let code = (b / s).rounded(.toNearestOrEven)
            // Any int32 code: quantize_static clips a dead channel's bias (weights near 0, a tiny scale) to about
            // −2^31, which the int32 sum then carries as onnxruntime's does (wrapping, like its vector adds).
            guard s.isFinite, s > 0, Self.isInt32(code), Self.isCode(b / s, code) else { return false }
            codes[j] = Int32(code)
            mult[j] = s / scale
            guard mult[j].isFinite else { return false }
        }
        let bp = UnsafeMutablePointer<Int32>.allocate(capacity: padded), mp = UnsafeMutablePointer<Float>.allocate(capacity: padded)
        bp.initialize(from: codes, count: padded)
        mp.initialize(from: mult, count: padded)
        requant = (bp, mp, lo - zeroPoint, hi - zeroPoint, scale)
        return true
    }

    /// y's columns [c, c + count) of rows [m0, m1) from quantized rows, then `residual` and `act`: `mlk_qgemm_requant`
    /// when requantizing (a residual is the add after the QuantizeLinear the layer absorbed: `FusedResidual`), else
    /// `mlk_qgemm` with `bias` (from column c).
    /// With `writesCodes`, `codes` (row 0's bytes from column c, rows `ldy` apart) takes the output instead of y.
    func gemm(_ q: UnsafePointer<UInt8>, ldq: Int, _ scales: UnsafePointer<Float>, _ zps: UnsafePointer<Int32>,
              panels: UnsafePointer<Int8>, column c: Int, count: Int, rows m0: Int, _ m1: Int, bias: UnsafePointer<Float>?,
              residual: UnsafePointer<Float>?, _ y: UnsafeMutablePointer<Float>, ldy: Int, act: Act,
              codes: UnsafeMutablePointer<UInt8>? = nil) {
        if let r = requant {
            var rq = mlk_qrequant(bias: UnsafePointer(r.bias + c), mult: UnsafePointer(r.mult + c), lo: r.lo, hi: r.hi,
                                  scale: r.scale, codes: writesCodes ? codes : nil, ldc: Int64(ldy))
            mlk_qgemm_requant(q, Int64(ldq), zps, panels, colsum + c, Int64(m0), Int64(m1), Int64(count), Int64(k), &rq,
                              residual, y, Int64(ldy), act.code, act.p0, act.p1, wide)
        } else {
            mlk_qgemm(q, Int64(ldq), scales, zps, panels, colsum + c, self.scales + c, Int64(m0), Int64(m1), Int64(count),
                      Int64(k), bias, residual, y, Int64(ldy), act.code, act.p0, act.p1, wide)
        }
    }

    /// Rows [0, rows) of `a` as `mlk_qgemm` reads them: the codes of the run's dynamic pair (`dynamic`, from
    /// `dynamicCodes`), the input's codes (`inputCodes`), or each row quantized to 7 bits.
    func quantizeRows(_ a: UnsafePointer<Float>, lda: Int, rows: Int, _ q: UnsafeMutablePointer<UInt8>, ldq: Int,
                      _ scales: UnsafeMutablePointer<Float>, _ zps: UnsafeMutablePointer<Int32>,
                      dynamic: (scale: Float, zeroPoint: Int32)? = nil) {
        if readsStoredCodes, let c = inputCodes {
            // The rows are the stored codes themselves (the caller reads them in place): only their parameters.
            scales.update(repeating: c.scale, count: rows)
            zps.update(repeating: c.zeroPoint, count: rows)
        } else if let d = dynamic {
            mlk_quantize_rows_divided(a, Int64(lda), 0, Int64(rows), Int64(k), q, Int64(ldq), scales, zps, d.scale, d.zeroPoint)
        } else if let c = inputCodes {
            mlk_quantize_rows_fixed(a, Int64(lda), 0, Int64(rows), Int64(k), q, Int64(ldq), scales, zps, c.scale, c.zeroPoint)
        } else {
            mlk_quantize_rows(a, Int64(lda), 0, Int64(rows), Int64(k), q, Int64(ldq), scales, zps)
        }
    }

    /// Kept indices; their column sums from the panels they decode to, `blockColumns` columns at a time (summing each
    /// value through the bit stream in Swift took 20 ms for EfficientNet-Lite0).
    private init(kept: (indices: UnsafeMutablePointer<UInt8>, bits: Int, tables: [Int8]), k: Int, n: Int,
                 scales s: [Float]) {
        (self.k, self.n, self.kept, packed) = (k, n, kept, nil)
        panelBytes = Int(mlk_qpanel_bytes(Int64(k)))
        (colsum, scales) = Self.columns(n, scales: s)
        let panels = (n &+ 15) / 16, step = max(1, blockColumns / 16)
        let block = UnsafeMutablePointer<Int8>.allocate(capacity: step &* panelBytes)
        defer { block.deallocate() }
        for p0 in stride(from: 0, to: panels, by: step) {
            let p1 = min(panels, p0 &+ step)
            decode(panels: p0, p1, into: block)
            mlk_qpanel_colsum(block, Int64(k), Int64(p1 &- p0), colsum + p0 &* 16)
        }
    }

    /// Column sums (to be filled) and scales, n rounded up to 16 and zero-padded.
    private static func columns(_ n: Int, scales s: [Float]) -> (UnsafeMutablePointer<Int32>, UnsafeMutablePointer<Float>) {
        let padded = (n &+ 15) / 16 &* 16
        let colsum = UnsafeMutablePointer<Int32>.allocate(capacity: padded), scales = UnsafeMutablePointer<Float>.allocate(capacity: padded)
        colsum.initialize(repeating: 0, count: padded)
        scales.initialize(repeating: 0, count: padded)
        for c in 0..<n { scales[c] = s[c] }
        return (colsum, scales)
    }

    deinit {
        requant?.bias.deallocate()
        requant?.mult.deallocate()
        packed?.deallocate()
        kept?.indices.deallocate()
        colsum.deallocate()
        scales.deallocate()
    }

    /// Decodes the kept indices of panels [p0, p1) into `panels` (panel p0 first, `panelBytes` each): the bytes
    /// `mlk_qpack` gives for the values. Nothing to do for packed weights.
    func decode(panels p0: Int, _ p1: Int, into panels: UnsafeMutablePointer<Int8>) {
        guard let kept else { return }
        kept.tables.withUnsafeBufferPointer { t in
            mlk_qpalette_unpack(kept.indices, Int32(kept.bits), Int64(k), Int64(n), t.baseAddress, Int64(p0), Int64(p1),
                                panels)
        }
    }

    /// Columns decoded and multiplied at a time when kept indices meet few rows: whole 48-column groups of about
    /// 96 KB, which stay in L2 between being written and read.
    var blockColumns: Int { max(48, (96 * 1024 / max(panelBytes / 16, 1)) / 48 &* 48) }

    /// Floats of scratch a step gives this layer for `rows` rows: `scratchFloats(rows:k:)`, then, for kept indices,
    /// room for every panel (only the blocks a run writes become resident) from the next 64-byte boundary.
    func scratchFloats(rows: Int) -> Int {
        guard kept != nil else { return Self.scratchFloats(rows: rows, k: k) }
        return (Self.roomOffset(rows: rows, k: k) &+ (n &+ 15) / 16 &* panelBytes &+ 64 &+ 3) / 4
    }

    /// Bytes from the start of the scratch to the decoding room: the quantized rows, scales and zero points, rounded
    /// up to 64.
    static func roomOffset(rows: Int, k: Int) -> Int { (scratchFloats(rows: rows, k: k) &* 4 &+ 63) / 64 &* 64 }

    /// Floats of scratch that `rows` quantized rows take: their u8 values, scales and zero points.
    static func scratchFloats(rows: Int, k: Int) -> Int {
        // Layout (see Fast.quantizedGemm): the u8 rows, rounded up to 64 bytes, then the scales, then the zero points.
        (rows &* Int(mlk_qrow_bytes(Int64(k))) &+ 63) / 64 &* 16 &+ 2 &* rows
    }
}
