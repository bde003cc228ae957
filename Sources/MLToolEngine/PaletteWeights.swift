import CMLToolCPU
import CMLToolKernels
import MLToolCore

/// A palettized conv or dense weight (`mltool quantize --bits 1/2/4/6/8` in palette mode, or a Core ML palette)
/// kept as its stored k-bit indices, copied out of the model file so that its pages go back to the kernel (read in
/// place, they kept whole large folios of the file mapped: on Linux 6.18 / ext4, a 4-bit EfficientNet-Lite0 whose few
/// small float-table layers were read in place held 2 MB of file pages), plus its table and channel scales. The
/// engine decodes it into `mlk_pack`'s panels just before the layer's GEMM (`unpack`), into one buffer per arena that
/// every palettized layer shares, so a 4-bit model holds an eighth of float's weight memory instead of float's
/// packed copy. The decoded values are exactly the float dequantization's (`StoredTensor.floats`), so a layer
/// computes the same bits as the same weights stored as float.
///
/// Element (k, n) of the (K, N) weight is element k·N + n of the tensor; its channel along the quantization axis
/// then depends on k alone (any axis but the last) or on n alone (the last axis): the table offset and scale are a
/// per-row part plus a per-column part (`mlk_palette_unpack`).
final class PaletteWeights: @unchecked Sendable {
    /// The stored indices (`byteCount(elements: k · n)` bytes of the tensor): a copy where they are kept
    /// (`keepsIndices`), else the tensor's own bytes, read once to decode the layer at load.
    private let indices: UnsafeRawBufferPointer
    private let tensor: StoredTensor
    private let owned: Bool
    let bits: Int
    let k: Int
    let n: Int
    private let lut: [Float]
    private let rowBase: [Int32], rowScale: [Float]
    /// Padded to whole 16-column panels (base 0, scale 0: the kernel writes the padding as 0).
    private let colBase: [Int32], colScale: [Float]

    /// Floats of the packed form one decoded layer takes.
    var packedCount: Int { Int(mlk_packed_count(Int64(k), Int64(n))) }

    /// Panels of 16 columns.
    var panels: Int { (n &+ 15) / 16 }

    /// Whether a palette of `bits` stays as its indices at the current CPU level: where the kernels look its table up
    /// from registers (AVX-512: up to 6 bits; AVX2: up to 4); elsewhere decoding would cost more than the layer
    /// gains, so the layer is decoded once at load and runs as float. AVX2 at 6 bits (measured on EfficientNet-Lite0,
    /// Zen 3, batch 1, 1 thread): through gathers 0.68× float; through byte-plane lookups (16 tables, 0.38 ns a
    /// weight against 0.12 for 4 bits) 0.75×, at 44% of float's model memory instead of 96%, so still at load.
    static func keepsIndices(bits: Int) -> Bool {
        if mlk_cpu_has(Int32(MLK_CPU_AVX512)) != 0 { return bits <= 6 }
        if mlk_cpu_has(Int32(MLK_CPU_AVX2)) != 0 { return bits <= 4 }
        return false
    }

    /// nil unless `t` is a palette of k · n elements whose bytes, table and scales are all there and whose channel
    /// axis maps to rows or columns of the (k, n) matrix as above; anything else is dequantized and packed at load,
    /// where a bad tensor is reported.
    init?(_ t: StoredTensor, k: Int, n: Int) {
        let bits = t.dtype.traits.bits
        guard t.dtype.traits.isPalette, [1, 2, 4, 6, 8].contains(bits), k > 0, n > 0,
              case let (count, overflow) = k.multipliedReportingOverflow(by: n), !overflow, t.elementCount == count,
              let need = try? t.dtype.traits.byteCount(elements: count), t.bytes.count >= need,
              t.bytes.buffer.baseAddress != nil, let q = t.quant, let lut = q.lut, q.zeroPoints == nil,
              lut.count < Int(Int32.max) else { return nil }
        let entries = 1 << bits
        // Channel count and the elements per channel slice, as StoredTensor.floats splits the shape.
        guard let (_, channels, inner) = try? t.axisSplit() else { return nil }
        let groupSize = q.axis == nil ? 1 : (q.groupSize ?? 1)
        guard channels > 0, inner > 0, groupSize >= 1 else { return nil }
        let groups = (channels &+ groupSize &- 1) / groupSize
        guard lut.count == groups &* entries else { return nil }
        if let s = q.scales { guard q.axis != nil, s.count == channels else { return nil } }
        let base = { (c: Int) in Int32((c / groupSize) &* entries) }
        let scale = { (c: Int) in q.scales?[c] ?? 1 }
        let padded = (n &+ 15) / 16 &* 16
        if inner % n == 0 {
            // The channel of row k: element k·n lies in slice (k·n / inner) mod channels, the same for every n.
            let rowsPerSlice = inner / n
            let c = (0..<k).map { ($0 / rowsPerSlice) % channels }
            rowBase = c.map(base)
            rowScale = c.map(scale)
            colBase = [Int32](repeating: 0, count: padded)
            colScale = (0..<padded).map { $0 < n ? 1 : 0 }
        } else if inner == 1 && channels == n {
            rowBase = [Int32](repeating: 0, count: k)
            rowScale = [Float](repeating: 1, count: k)
            colBase = (0..<padded).map { $0 < n ? base($0) : 0 }
            colScale = (0..<padded).map { $0 < n ? scale($0) : 0 }
        } else {
            return nil
        }
        let stored = UnsafeRawBufferPointer(rebasing: t.bytes.buffer[0..<need])
        owned = Self.keepsIndices(bits: bits)
        if owned {
            let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: need, alignment: 64)
            copy.copyMemory(from: stored)
            indices = UnsafeRawBufferPointer(copy)
        } else {
            indices = stored
        }
        tensor = t
        self.bits = bits
        self.k = k
        self.n = n
        self.lut = lut
    }

    deinit { if owned { indices.deallocate() } }

    /// Decodes panels [p0, p1) into `packed` (panel p0 first: the `mlk_pack` layout of columns [16·p0, 16·p1)).
    func unpack(panels p0: Int, _ p1: Int, into packed: UnsafeMutablePointer<Float>) {
        let raw = indices
        guard let base = raw.baseAddress else { return }   // checked at init
        lut.withUnsafeBufferPointer { l in
            mlk_palette_unpack(base.assumingMemoryBound(to: UInt8.self), Int64(raw.count), Int32(bits), Int64(k),
                               Int64(n), l.baseAddress, rowBase, rowScale, colBase, colScale, Int64(p0), Int64(p1), packed)
        }
    }

    /// y[m][c] = act(a[m] · w[·][c] + bias[c] + residual[m][c]) for up to `gemvRows` input rows (row m at a + m·lda,
    /// of y and the residual at + m·n) and columns [lo, hi) (lo a multiple of 16), each weight decoded into a register
    /// and used there by a tile of rows (`mlk_palette_gemv`: up to 4 rows × 64 columns, or up to 25 rows × 16, so a
    /// 7 × 7 layer's 49 rows decode each weight twice and never write it out): false, with nothing done, where the
    /// kernel has no variant. `work` (`gemvWork(rows:)` floats, or nil) is where a tall tile's rows are copied;
    /// `packed`: `tallPack` has put them there already.
    func gemv(_ a: UnsafePointer<Float>, rows: Int, lda: Int, columns lo: Int, _ hi: Int, bias: UnsafePointer<Float>?,
              residual: UnsafePointer<Float>?, _ y: UnsafeMutablePointer<Float>, act: Act,
              work: UnsafeMutablePointer<Float>?, packed: Bool = false) -> Bool {
        let raw = indices
        guard let base = raw.baseAddress else { return false }
        return lut.withUnsafeBufferPointer { l in
            mlk_palette_gemv(a, Int64(rows), Int64(lda), base.assumingMemoryBound(to: UInt8.self), Int64(raw.count),
                             Int32(bits), Int64(k), Int64(n), l.baseAddress, rowBase, rowScale, colBase, colScale,
                             Int64(lo / 16), Int64((hi &+ 15) / 16), bias, residual, y, act.code, act.p0, act.p1, work,
                             packed ? 1 : 0) != 0
        }
    }

    /// The tiles `gemv` takes `rows` input rows in as tall tiles over every column (`mlk_palette_tall_tiles`), or 0.
    /// With tiles, a caller splitting the columns packs the rows once (`tallPack`, tiles split across threads) and
    /// passes `packed: true` to every part, where each part would pack all the rows again.
    func tallTiles(rows: Int) -> Int {
        Int(mlk_palette_tall_tiles(Int64(rows), Int32(bits), Int64(k), Int64(n), rowBase, colBase))
    }

    /// Tiles [t0, t1) of `rows` rows of a (row stride lda) into `work` (`gemvWork(rows:)` floats) as `gemv` reads them.
    func tallPack(_ a: UnsafePointer<Float>, rows: Int, lda: Int, tiles t0: Int, _ t1: Int,
                  into work: UnsafeMutablePointer<Float>) {
        mlk_palette_tall_pack(a, Int64(rows), Int64(lda), Int64(k), Int64(t0), Int64(t1), work)
    }

    /// Input rows up to which `gemv` decodes in registers (fewer than `Fast.fewRows`: a 7 × 7 layer on one image, a
    /// dense layer on the engine's chunk).
    static let gemvRows = Int(MLK_PALETTE_GEMV_ROWS)

    /// Floats of `gemv`'s work for `rows` input rows (MLK_PALETTE_GEMV_WORK).
    func gemvWork(rows: Int) -> Int { Int(mlk_palette_gemv_work(Int64(rows), Int64(k))) }

    /// Decodes every panel, split across `threads` threads by panels.
    func unpack(into packed: UnsafeMutablePointer<Float>, threads: Int) {
        nonisolated(unsafe) let packed = packed
        let parts = k &* n >= Self.parallelMinimum ? threads : 1
        Fast.parallel(panels, parts: parts) { lo, hi in self.unpack(panels: lo, hi, into: packed + lo &* self.k &* 16) }
    }

    /// Columns decoded and multiplied at a time when a GEMM has few rows (`Fast.packedGemm`): whole 48-column groups
    /// (the AVX-512 tile's width) of about 192 KB, which stay in L2 between being written and read.
    func blockColumns() -> Int { max(48, (192 * 1024 / max(k &* 4 &* 48, 1)) &* 48) }

    /// Weights from which decoding is split across threads.
    static let parallelMinimum = 65_536
}
