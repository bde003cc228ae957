import CMLToolKernels
import Dispatch
import COpenBLAS
import MLToolCore

/// The fast path: OpenBLAS SGEMM for convolutions (1×1 convs read the NHWC input directly, k×k go through
/// im2col), the C AVX2/FMA kernels for depthwise convs and epilogues, and the reference kernels for ops that are
/// cheap or rare. Same signature as `Reference.run`, plus a scratch buffer of `scratchCount` floats.
enum Fast {
    /// Floats of scratch the step needs (im2col rows for one image and one group) on up to `threads` threads.
    static func scratchCount(_ s: Step, _ xs: [[Int]], _ ys: [Int], threads: Int) -> Int {
        if s.op == .dense, let q = s.qweights { return q.scratchFloats(rows: ys[0]) }
        if s.op == .matMul, let q = s.qweights { return q.scratchFloats(rows: ys.dropLast().reduce(1, &*)) }
        if s.op == .convTranspose { return convTransposeScratch(s, xs[0]) }
        if s.op == .batchMatMul { return batchMatMulScratch(xs, threads: threads) }
        guard s.op == .conv else { return 0 }
        if let d = s.qdepthwise, d.run != nil, isDepthwise(s, xs[0]) { return quantizedDepthwiseScratch(s, d, xs[0], ys) }
        if s.winograd != nil {
            // V (16 planes of tiles × C) and M (16 planes of tiles × N) of one image.
            let t = Int64(winogradTiles(ys))
            return 16 &* Int(mlk_winograd_plane(t, Int64(s.weightShape[2])) &+ mlk_winograd_plane(t, Int64(s.weightShape[3])))
        }
        let direct = readsInputDirectly(s)
        let cols = direct ? 0 : ys[1] * ys[2] * s.weightShape[0] * s.weightShape[1] * s.weightShape[2]
        if let q = s.qweights {
            return cols + q.scratchFloats(rows: direct ? ys[0] * ys[1] * ys[2] : ys[1] * ys[2])
        }
        return isDepthwise(s, xs[0]) || direct ? 0 : cols
    }

    /// A conv with few input channels (a network's first) that `mlk_conv_rows` runs: interior pixels straight from
    /// the input, borders through im2col rows, a row of output pixels at a time.
    static func isStem(_ s: Step, _ xs: [Int]) -> Bool {
        s.op == .conv && s.groups == 1 && s.weightShape.count == 4 && xs.count == 4 && !readsInputDirectly(s) &&
            s.dilations.count == 2 && s.weightShape[2] == xs[3] &&
            mlk_conv_direct_eligible(Int64(xs[3]), Int64(s.weightShape[1]), Int64(s.weightShape[3]),
                                     Int64(s.dilations[0]), Int64(s.dilations[1])) != 0
    }

    static func isDepthwise(_ s: Step, _ xs: [Int]) -> Bool {
        s.weightShape[2] == 1 && s.groups == xs[3] && s.weightShape[3] == xs[3]
    }

    /// A 3×3, stride-1, undilated conv (groups 1) with more than 16 input channels runs as Winograd F(2×2, 3×3)
    /// (`winograd.c`): 16/36 of the multiply-adds. Fewer channels are a stem, which the im2col path or the direct
    /// one does better. Measured (AMD EPYC, AVX2): 1.2–1.7× over im2col + GEMM on YOLOv8n's 3×3 layers (bench/README.md).
    static func usesWinograd(_ s: Step) -> Bool {
        s.op == .conv && s.weightShape.count == 4 && s.weightShape[0] == 3 && s.weightShape[1] == 3 && s.groups == 1
            && s.strides == [1, 1] && s.dilations == [1, 1] && s.weightShape[2] > 16
    }

    /// 2×2 output tiles of one image of output shape ys (N, OH, OW, C).
    static func winogradTiles(_ ys: [Int]) -> Int { ((ys[1] &+ 1) / 2) &* ((ys[2] &+ 1) / 2) }

    /// A 1×1, stride-1, unpadded conv is a GEMM on the input as it lies: (N·H·W, C) · (C, OC).
    static func readsInputDirectly(_ s: Step) -> Bool {
        s.weightShape[0] == 1 && s.weightShape[1] == 1 && s.strides == [1, 1] && s.pads == [0, 0, 0, 0]
    }

    /// y (m, n) with row stride ldc = a (m, k; row stride lda) · b (k, n; row stride ldb).
    @inline(__always)
    static func sgemm(_ m: Int, _ n: Int, _ k: Int, _ a: UnsafePointer<Float>, _ lda: Int, _ b: UnsafePointer<Float>,
                      _ ldb: Int, _ c: UnsafeMutablePointer<Float>, _ ldc: Int) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Int32(m), Int32(n), Int32(k), 1, a, Int32(lda),
                    b, Int32(ldb), 0, c, Int32(ldc))
    }

    /// Runs `body` over [0, n) split into contiguous ranges (multiples of `align`) on `threads` threads. There are
    /// up to 3 ranges per thread, as even as the alignment allows (sizes differ by at most one `align`), handed out
    /// as threads come free, so a thread the OS delays does not hold the others up. Each output element is
    /// computed by exactly one range, so results do not depend on the split.
    static func parallel(_ n: Int, parts threads: Int, align: Int = 1, _ body: @escaping @Sendable (Int, Int) -> Void) {
        let units = (n + align - 1) / align
        let parts = min(threads > 1 ? threads * 3 : 1, units)
        if parts <= 1 { body(0, n); return }
        WorkerPool.shared(helpers: threads - 1).run(parts) { i in
            // The larger ranges first: the last ones, taken by whichever thread is free, are the shorter.
            let (q, r) = units.quotientAndRemainder(dividingBy: parts)
            let u0 = i &* q &+ min(i, r), u1 = u0 &+ q &+ (i < r ? 1 : 0)
            let lo = min(n, u0 &* align), hi = min(n, u1 &* align)
            if lo < hi { body(lo, hi) }
        }
    }

    /// Work (multiply-adds) below which an op stays on one thread.
    static let parallelThreshold = 400_000

    /// The kernel that runs a step on the fast path: chosen once per plan from the step and its input shapes (see
    /// `kernel(for:_:)`), so the choice is visible (`Engine.plannedKernels`) and `run` only dispatches.
    enum Kernel: String, Sendable {
        case conv, quantizedDense, packedDense, matMul, activation, addSame, broadcastBinary, transpose, pad
        /// A quantizedDense reading dynamic codes of the same input as the step before it (attention's Q, K and V
        /// projections): that step's codes, scales and zero points are still at the start of scratch, so it multiplies
        /// them without quantizing again (set by `Plan`, `Plan.sharesCodes`).
        case quantizedDenseSharedCodes
        /// ONNX Resize and strided slices (`Kernels+Resize.swift`, `Kernels+Slice.swift`).
        case resize, slice
        /// Concatenation as one block copy per input and outer index.
        case concat
        /// Softmax along any axis, lanes side by side (`mlk_softmax`).
        case softmax
        /// Max / average pooling over whole channel rows (`pool`).
        case pool
        /// Dilated pooling windows (rare: ONNX only) on the scalar reference kernel.
        case dilatedPool
        case batchNorm, globalAvgPool
        /// Reductions along axes (`Kernels+Reduce.swift`) and `where` (`Kernels+Select.swift`).
        case reduce, select
        /// erf elementwise, vectorised (`mlk_erf`): a transformer's exact GELU.
        case erf
        /// The exact GELU elementwise, vectorised (`mlk_gelu`, erf as `mlk_erf`'s).
        case gelu
        /// LSTM, GRU, RNN: GEMMs for the products, vectorised gate functions (`Kernels+Recurrent.swift`).
        case recurrent
        /// A GEMM into columns and col2im (`Kernels+ConvTranspose.swift`).
        case convTranspose
        /// Normalisation over trailing axes, a row per thread part (`Kernels+LayerNorm.swift`).
        case layerNorm
        /// A packed GEMM per output matrix (`Kernels+BatchMatMul.swift`).
        case batchMatMul
        /// ONNX QuantizeLinear / DequantizeLinear (`Kernels+Quantize.swift`).
        case linearQuant
        /// Ops that are cheap or rare (global max pool, log-softmax, ...): the scalar reference kernel.
        case reference
    }

    /// A dense layer that runs on the packed or the int8 GEMM (`packedDense`, `quantizedDense`), whose epilogue applies
    /// the step's activation and can add a residual.
    static func runsOnGemm(_ s: Step) -> Bool {
        switch s.op {
        case .dense: return s.packed != nil || s.qweights != nil || s.palette != nil
        case .matMul: return s.packed != nil || s.qweights != nil
        default: return false
        }
    }

    static func kernel(for s: Step, _ xs: [[Int]]) -> Kernel {
        switch s.op {
        case .conv: return .conv
        case .convTranspose: return .convTranspose
        case .layerNorm: return .layerNorm
        case .batchMatMul: return .batchMatMul
        case .dense: return s.qweights != nil ? .quantizedDense : .packedDense
        case .matMul where s.qweights != nil: return .quantizedDense
        case .matMul where s.packed != nil: return .packedDense
        case .matMul: return .matMul
        case .relu, .clip, .leakyRelu, .sigmoid, .hardSigmoid, .hardSwish, .swish, .tanh, .identity,
             .reshape, .flatten, .squeeze, .unsqueeze: return .activation
        case .add where xs[0] == xs[1]: return .addSame
        case .add, .sub, .mul, .div, .pow, .binary: return .broadcastBinary
        case .reduce: return .reduce
        case .unary where s.unary == .erf: return .erf
        case .unary where s.unary == .gelu: return .gelu
        case .where: return .select
        case .transpose: return .transpose
        case .concat: return .concat
        case .softmax: return .softmax
        case .resize: return .resize
        case .slice: return .slice
        case .pad: return .pad
        case .maxPool, .avgPool: return s.dilations == [1, 1] ? .pool : .dilatedPool
        case .batchNorm: return .batchNorm
        case .globalAvgPool: return .globalAvgPool
        case .lstm, .gru, .rnn: return .recurrent
        case .quantize, .dequantize: return .linearQuant
        default: return .reference
        }
    }

    static func run(_ kernel: Kernel, _ s: Step, _ x: [UnsafePointer<Float>], _ xs: [[Int]], _ y: UnsafeMutablePointer<Float>,
                    _ ys: [Int], scratch: UnsafeMutablePointer<Float>, threads: Int) {
        let n = ys.reduce(1, *)
        if n == 0 { return }   // an empty output (e.g. a batch of 0): nothing to compute
        switch kernel {
        case .conv: conv(s, x[0], xs[0], y, ys, scratch, threads)
        case .convTranspose: convTranspose(s, x[0], xs[0], y, ys, scratch, threads)
        case .layerNorm: layerNorm(s, x[0], xs[0], y, threads: threads)
        case .batchMatMul: batchMatMul(x, xs, y, ys, scratch: scratch, threads: threads)
        case .quantizedDense, .quantizedDenseSharedCodes:
            guard let q = s.qweights else { preconditionFailure("dense '\(s.name)': no int8 weights (Program.compile)") }
            // dense: y (rows, n); matMul: y (…, rows, n), every row of a at once.
            let rows = n / s.weightShape[1], ready = kernel == .quantizedDenseSharedCodes
            quantizedGemm(x[0], lda: s.weightShape[0], q, rows: rows, bias: s.bias.map { UnsafePointer($0.pointer) },
                          y, act: s.act, scratch: scratch, threads: threads,
                          dynamic: ready ? nil : q.dynamicCodes(x[0], count: rows &* s.weightShape[0]), codesReady: ready)
        case .packedDense:
            guard let packed = s.packed else { preconditionFailure("dense '\(s.name)': no packed weights (Program.compile)") }
            packedGemm(x[0], lda: s.weightShape[0], packed.pointer, rows: n / s.weightShape[1], n: s.weightShape[1], k: s.weightShape[0],
                       bias: s.bias.map { UnsafePointer($0.pointer) }, y, act: s.act, threads: threads, palette: s.palette)
        case .matMul:
            let k = xs[1][0], m = xs[1][1]
            sgemm(n / m, m, k, x[0], k, x[1], m, y, m)
            if let b = s.bias { mlk_bias_act(y, Int64(n / m), Int64(m), b.pointer, s.act.code, s.act.p0, s.act.p1) }
        case .activation:
            nonisolated(unsafe) let (a, y) = (x[0], y)
            let act = s.act
            rowsInParallel(n, elements: n, threads: threads) { lo, hi in
                (y + lo).update(from: a + lo, count: hi - lo)
                mlk_bias_act(y + lo, 1, Int64(hi - lo), nil, act.code, act.p0, act.p1)
            }
        case .addSame:
            nonisolated(unsafe) let (a, b, y) = (x[0], x[1], y)
            let act = s.act
            rowsInParallel(n, elements: n, threads: threads) { lo, hi in
                mlk_add_act(a + lo, b + lo, y + lo, Int64(hi - lo), act.code, act.p0, act.p1)
            }
        case .broadcastBinary: binary(s, x[0], xs[0], x[1], xs[1], y, ys, threads: threads)
        case .erf:
            nonisolated(unsafe) let (a, y) = (x[0], y)
            rowsInParallel(n, elements: n, threads: threads) { lo, hi in mlk_erf(a + lo, y + lo, Int64(hi - lo)) }
        case .gelu:
            nonisolated(unsafe) let (a, y) = (x[0], y)
            rowsInParallel(n, elements: n, threads: threads) { lo, hi in mlk_gelu(a + lo, y + lo, Int64(hi - lo)) }
        case .reduce: reduce(s, x[0], xs[0], y, ys, threads: threads)
        case .select: select(x, xs, y, ys, threads: threads)
        case .transpose: transpose(s, x[0], xs[0], y, ys, threads: threads)
        case .concat: concat(s, x, xs, y, ys, threads: threads)
        case .softmax: softmax(s, x[0], xs[0], y, threads: threads)
        case .resize: resize(s, x[0], xs[0], y, ys, threads: threads)
        case .slice: slice(s, x[0], xs[0], y, ys, threads: threads)
        case .pad: pad(s, x[0], xs[0], y, ys)
        case .pool: pool(s, x[0], xs[0], y, ys, threads: threads)
        case .dilatedPool: Reference.pool(s, x[0], xs[0], y, ys)
        case .batchNorm: batchNorm(s, x[0], y, count: n)
        case .globalAvgPool:
            let (b, hw, c) = (xs[0][0], xs[0][1] &* xs[0][2], xs[0][3])
            let inv = 1 / Float(hw)
            for i in 0..<b {
                let out = y + i &* c
                out.initialize(repeating: 0, count: c)
                var p = x[0] + i &* hw &* c
                for _ in 0..<hw {
                    for ch in 0..<c { out[ch] += p[ch] }
                    p += c
                }
                for ch in 0..<c { out[ch] *= inv }
            }
        case .recurrent: recurrent(s, x, xs, y, ys)
        case .linearQuant: linearQuant(s, x[0], xs[0], y, threads: threads)
        case .reference:
            Reference.run(s, x, xs, y, ys)
        }
    }

    /// Softmax along the step's axis: rows (the last axis) or each outer slice's lanes (positions along the inner
    /// axes) split across threads when there are enough of them; a lane's result does not depend on the split.
    static func softmax(_ s: Step, _ x: UnsafePointer<Float>, _ xs: [Int], _ y: UnsafeMutablePointer<Float>,
                        threads: Int) {
        guard let ax = try? Program.axis(s.axis ?? -1, rank: xs.count, s) else { return }   // checked by shape inference
        let outer = xs[..<ax].reduce(1, &*), inner = xs[(ax + 1)...].reduce(1, &*), len = xs[ax]
        let parts = outer &* len &* inner >= copyParallelThreshold ? threads : 1
        if inner == 1 {
            nonisolated(unsafe) let (x, y) = (x, y)
            parallel(outer, parts: parts, align: 8) { lo, hi in mlk_softmax_rows(x, y, Int64(len), Int64(lo), Int64(hi)) }
            return
        }
        for o in 0..<outer {
            nonisolated(unsafe) let xo = x + o &* len &* inner, yo = y + o &* len &* inner
            parallel(inner, parts: parts, align: 8) { lo, hi in
                mlk_softmax(xo, yo, Int64(len), Int64(inner), Int64(lo), Int64(hi))
            }
        }
    }

    /// Fills rows [lo, hi) of an im2col matrix into the given memory (row lo first).
    typealias Im2col = @Sendable (Int, Int, UnsafeMutablePointer<Float>) -> Void

    /// y (rows, n) = act(a (rows, k; row stride lda) · B + bias), B packed by `mlk_pack`; large products are split
    /// across threads by rows, or by 48-column groups when there are few rows (7×7 layers, a dense layer).
    /// With `prepare`, `a` is scratch for the im2col rows (room for `rows` rows of `lda`) that `prepare` fills.
    ///
    /// With a `residual` (y's layout), y = act(a · B + bias + residual): a projection conv and the add after it.
    ///
    /// With a `palette`, `b` is the memory its panels are decoded into: with few rows, each part decodes its columns
    /// a block at a time (`PaletteWeights.blockColumns`) into the start of its own columns' panels and multiplies
    /// that block while it is in cache, so the weights never stream through memory as floats; otherwise all panels
    /// are decoded first.
    static func packedGemm(_ a: UnsafePointer<Float>, lda: Int, _ b: UnsafePointer<Float>, rows: Int, n: Int, k: Int,
                           bias: UnsafePointer<Float>?, _ y: UnsafeMutablePointer<Float>, act: Act, threads: Int,
                           prepare: Im2col? = nil, palette: PaletteWeights? = nil,
                           residual: UnsafePointer<Float>? = nil) {
        nonisolated(unsafe) let (a, b, bias, y, res) = (a, b, bias, y, residual)
        let parts = rows &* n &* k >= parallelThreshold ? threads : 1
        if let palette {
            if rows < fewRows {
                prepare?(0, rows, UnsafeMutablePointer(mutating: a))
                // Tall tiles over every column: the rows packed once, tiles split across threads, into the decoding
                // memory (nothing is decoded there then), where each column part would pack them all again.
                let tiles = palette.tallTiles(rows: rows)
                if tiles > 0 && palette.packedCount >= palette.gemvWork(rows: rows) {
                    nonisolated(unsafe) let work = UnsafeMutablePointer(mutating: b)
                    parallel(tiles, parts: min(parts, tiles)) { lo, hi in
                        palette.tallPack(a, rows: rows, lda: lda, tiles: lo, hi, into: work)
                    }
                    parallel(n, parts: parts, align: 48) { lo, hi in
                        if palette.gemv(a, rows: rows, lda: lda, columns: lo, hi, bias: bias, residual: res, y,
                                        act: act, work: work, packed: true) { return }
                        // Only if the kernel level changed since the tiles were counted (every part runs at the
                        // caller's level, so only a mlk_set_thread_cpu_level in between could do it): this part
                        // decodes into memory of its own, the packed rows being in use.
                        let own = UnsafeMutablePointer<Float>.allocate(capacity: (hi &- lo &+ 15) / 16 &* 16 &* k)
                        defer { own.deallocate() }
                        decodeAndMultiply(palette, a, lda: lda, rows: rows, columns: lo, hi, bias: bias, residual: res,
                                          y, act: act, into: own)
                    }
                    return
                }
                parallel(n, parts: parts, align: 48) { lo, hi in
                    // A few rows (a 7 × 7 layer, a dense layer on up to 4 images): decoded in registers where
                    // the kernel can, a tall tile's rows copied into this part's columns of the decoding buffer.
                    let w = UnsafeMutablePointer(mutating: b + lo &* k)
                    let room = ((hi &+ 15) / 16 &* 16 &- lo) &* k >= palette.gemvWork(rows: rows)
                    if rows <= PaletteWeights.gemvRows && palette.gemv(
                        a, rows: rows, lda: lda, columns: lo, hi, bias: bias, residual: res, y, act: act,
                        work: room ? w : nil) { return }
                    decodeAndMultiply(palette, a, lda: lda, rows: rows, columns: lo, hi, bias: bias, residual: res, y,
                                      act: act, into: w)
                }
                return
            }
            palette.unpack(into: UnsafeMutablePointer(mutating: b), threads: threads)
        }
        if parts > 1 && rows < fewRows && n >= 96 {
            prepare?(0, rows, UnsafeMutablePointer(mutating: a))
            parallel(n, parts: parts, align: 48) { lo, hi in
                mlk_gemm_packed_res(a, Int64(lda), b + lo &* k, 0, Int64(rows), Int64(hi - lo), Int64(k),
                                    bias.map { $0 + lo }, res.map { $0 + lo }, y + lo, Int64(n), act.code, act.p0, act.p1)
            }
        } else {
            parallel(rows, parts: parts, align: 8) { lo, hi in
                inBlocks(lo, hi, a, lda: lda, prepare) { rowLo, lo, hi in
                    mlk_gemm_packed_res(rowLo, Int64(lda), b, 0, Int64(hi - lo), Int64(n), Int64(k), bias,
                                        res.map { $0 + lo &* n }, y + lo &* n, Int64(n), act.code, act.p0, act.p1)
                }
            }
        }
    }

    /// Columns [lo, hi) of a palettized product on few rows, decoded a block of columns at a time
    /// (`PaletteWeights.blockColumns`) into `w` (room for the block's panels) and multiplied while in cache.
    static func decodeAndMultiply(_ palette: PaletteWeights, _ a: UnsafePointer<Float>, lda: Int, rows: Int,
                                  columns lo: Int, _ hi: Int, bias: UnsafePointer<Float>?,
                                  residual: UnsafePointer<Float>?, _ y: UnsafeMutablePointer<Float>, act: Act,
                                  into w: UnsafeMutablePointer<Float>) {
        let (k, n, block) = (palette.k, palette.n, palette.blockColumns())
        var c = lo
        while c < hi {
            let e = min(hi, c &+ block)
            palette.unpack(panels: c / 16, (e &+ 15) / 16, into: w)
            mlk_gemm_packed_res(a, Int64(lda), w, 0, Int64(rows), Int64(e &- c), Int64(k), bias.map { $0 + c },
                                residual.map { $0 + c }, y + c, Int64(n), act.code, act.p0, act.p1)
            c = e
        }
    }

    /// Rows below which a GEMM is split across threads by columns (and a palettized one decoded block by block):
    /// a 7×7 map's 49, a dense layer's batch.
    static let fewRows = 64

    /// Rows of an im2col matrix filled and multiplied at a time: one block (about 48 rows of a 3×3 × 64-channel
    /// conv, ~110 KB) stays in L2 while the GEMM reads it, and is reused for the next rows, so the im2col matrix is
    /// never written whole. A multiple of 6, the AVX2 tile's rows.
    static func blockRows(_ lda: Int) -> Int { max(6, (96 * 1024 / max(lda, 1)) / 6 * 6) }

    /// Runs `body(rowLo, lo, hi)` on rows [lo, hi) of `a`, `rowLo` pointing at row lo. With a `prepare` (im2col),
    /// the rows are filled in blocks (`blockRows`) into the memory of row lo of `a`, each just before `body` reads it.
    @inline(__always)
    static func inBlocks(_ lo: Int, _ hi: Int, _ a: UnsafePointer<Float>, lda: Int, _ prepare: Im2col?,
                         _ body: (UnsafePointer<Float>, Int, Int) -> Void) {
        let rowLo = a + lo &* lda
        guard let prepare else { body(rowLo, lo, hi); return }
        let block = UnsafeMutablePointer(mutating: rowLo)
        let step = blockRows(lda)
        var b = lo
        while b < hi {
            let e = min(hi, b &+ step)
            prepare(b, e, block)
            body(rowLo, b, e)
            b = e
        }
    }

    /// `packedGemm` with int8 weights: each part quantizes its rows of `a` (7 bits, one scale and zero point per row)
    /// into `scratch`, then runs `mlk_qgemm` on them; with few rows, all rows are quantized first and the columns
    /// split. The quantization of a row does not depend on the split, so results do not either. With a `residual`
    /// (y's layout), y = act(a · W + bias + residual), as `packedGemm`'s. Kept indices (`QuantizedWeights.kept`) are
    /// decoded into the scratch's room after the quantized rows: with few rows by each part, a block of its columns
    /// at a time (`blockColumns`) just before multiplying them; otherwise all panels first, split across threads.
    /// With `codesReady`, scratch already holds every row's codes, scales and zero points (the step before quantized
    /// the same input: `Kernel.quantizedDenseSharedCodes`).
    static func quantizedGemm(_ a: UnsafePointer<Float>, lda: Int, _ w: QuantizedWeights, rows: Int,
                              bias: UnsafePointer<Float>?, _ y: UnsafeMutablePointer<Float>, act: Act,
                              scratch: UnsafeMutablePointer<Float>, threads: Int,
                              prepare: Im2col? = nil, residual: UnsafePointer<Float>? = nil,
                              dynamic: (scale: Float, zeroPoint: Int32)? = nil, codes: UnsafeMutablePointer<UInt8>? = nil,
                              codesReady: Bool = false) {
        let (n, k) = (w.n, w.k)
        let ldq = Int(mlk_qrow_bytes(Int64(k)))
        let raw = UnsafeMutableRawPointer(scratch)
        nonisolated(unsafe) let quantized = raw.assumingMemoryBound(to: UInt8.self)
        // A layer reading stored codes (`QuantizedWeights.readsStoredCodes`) multiplies them in place (ldq is k).
        nonisolated(unsafe) let q = w.readsStoredCodes ? UnsafeMutableRawPointer(mutating: a).assumingMemoryBound(to: UInt8.self) : quantized
        nonisolated(unsafe) let codes = codes
        let scaleOffset = (rows &* ldq + 63) / 64 &* 64
        nonisolated(unsafe) let scales = (raw + scaleOffset).assumingMemoryBound(to: Float.self)
        nonisolated(unsafe) let zps = (raw + (scaleOffset &+ rows &* 4)).assumingMemoryBound(to: Int32.self)
        nonisolated(unsafe) let (a, bias, y, res) = (a, bias, y, residual)
        let parts = rows &* n &* k >= parallelThreshold ? threads : 1
        // The resident panels, or the room kept indices are decoded into (64-byte aligned: `scratchFloats(rows:)`).
        let room = raw + QuantizedWeights.roomOffset(rows: rows, k: k)
        let aligned = (room + (64 &- Int(bitPattern: room) & 63) & 63).assumingMemoryBound(to: Int8.self)
        nonisolated(unsafe) let panels = w.packed ?? aligned
        // Few rows: all quantized first, the columns split; kept indices decoded a block of columns at a time, each
        // into the start of this part's own room, so only a block per part is written.
        if rows < fewRows && (w.kept != nil || (parts > 1 && n >= 96)) {
            prepare?(0, rows, UnsafeMutablePointer(mutating: a))
            if !codesReady { w.quantizeRows(a, lda: lda, rows: rows, quantized, ldq: ldq, scales, zps, dynamic: dynamic) }
            parallel(n, parts: parts, align: 48) { lo, hi in
                let block = w.kept == nil ? hi &- lo : w.blockColumns
                var c = lo
                while c < hi {
                    let e = min(hi, c &+ block)
                    let at = panels + ((w.kept == nil ? c : lo) / 16) &* w.panelBytes
                    w.decode(panels: c / 16, (e &+ 15) / 16, into: at)
                    w.gemm(q, ldq: ldq, scales, zps, panels: at, column: c, count: e &- c, rows: 0, rows,
                           bias: bias.map { $0 + c }, residual: res.map { $0 + c }, y + c, ldy: n, act: act,
                           codes: codes.map { $0 + c })
                    c = e
                }
            }
        } else {
            if w.kept != nil {
                parallel((n &+ 15) / 16, parts: parts) { lo, hi in
                    w.decode(panels: lo, hi, into: panels + lo &* w.panelBytes)
                }
            }
            parallel(rows, parts: parts, align: 8) { lo, hi in
                inBlocks(lo, hi, a, lda: lda, prepare) { rowLo, lo, hi in
                    if !codesReady {
                        w.quantizeRows(rowLo, lda: lda, rows: hi - lo, quantized + lo &* ldq, ldq: ldq, scales + lo,
                                       zps + lo, dynamic: dynamic)
                    }
                    w.gemm(q, ldq: ldq, scales, zps, panels: panels, column: 0, count: n, rows: lo, hi, bias: bias,
                           residual: res, y, ldy: n, act: act, codes: codes)
                }
            }
        }
    }

    /// Fills rows [lo, hi) of one image's im2col matrix (all channels) into the memory given.
    static func im2col(_ s: Step, _ x: UnsafePointer<Float>, _ xs: [Int], _ ys: [Int]) -> Im2col {
        nonisolated(unsafe) let x = x
        let (h, w, c, ow) = (Int64(xs[1]), Int64(xs[2]), Int64(xs[3]), Int64(ys[2]))
        let (kh, kw) = (Int64(s.weightShape[0]), Int64(s.weightShape[1]))
        let (st, dl, pd) = (s.strides.map(Int64.init), s.dilations.map(Int64.init), s.pads.map(Int64.init))
        return { lo, hi, cols in
            mlk_im2col_rows(x, h, w, c, kh, kw, cols, ow, Int64(lo), Int64(hi), st[0], st[1], dl[0], dl[1], pd[0], pd[1])
        }
    }

    /// A stride-1 3×3 conv by Winograd F(2×2, 3×3), one image at a time: input transform of every tile into V,
    /// then the 16 GEMMs M[ξ] = V[ξ] · U[ξ] (one per position ξ, split across threads by ξ so each thread reads only
    /// its own transformed weights), then the output transform with bias and activation. Tiles are split across
    /// threads in the transforms; nothing depends on the split.
    static func winograd(_ s: Step, _ u: UnsafePointer<Float>, _ x: UnsafePointer<Float>, _ xs: [Int],
                         _ y: UnsafeMutablePointer<Float>, _ ys: [Int], _ scratch: UnsafeMutablePointer<Float>,
                         _ threads: Int) {
        let (batch, h, w, c) = (xs[0], xs[1], xs[2], xs[3])
        let (oh, ow, n) = (ys[1], ys[2], ys[3])
        let tw = (ow &+ 1) / 2, tiles = winogradTiles(ys)
        let (pt, pl) = (s.pads[0], s.pads[1])
        let pc = Int(mlk_packed_count(Int64(c), Int64(n)))
        let act = s.act
        nonisolated(unsafe) let (u, bias) = (u, s.bias.map { UnsafePointer($0.pointer) })
        let planeV = Int(mlk_winograd_plane(Int64(tiles), Int64(c))), planeM = Int(mlk_winograd_plane(Int64(tiles), Int64(n)))
        nonisolated(unsafe) let v = scratch, m = scratch + 16 &* planeV
        let parts = tiles &* 16 &* c &* n >= parallelThreshold ? threads : 1
        for b in 0..<batch {
            nonisolated(unsafe) let xb = x + b &* h &* w &* c, yb = y + b &* oh &* ow &* n
            parallel(tiles, parts: parts) { lo, hi in
                mlk_winograd_input(xb, Int64(h), Int64(w), Int64(c), Int64(pt), Int64(pl), Int64(tw), Int64(lo),
                                   Int64(hi), v, Int64(planeV))
            }
            parallel(16, parts: parts) { lo, hi in
                for xi in lo..<hi {
                    mlk_gemm_packed(v + xi &* planeV, Int64(c), u + xi &* pc, 0, Int64(tiles), Int64(n), Int64(c),
                                    nil, m + xi &* planeM, Int64(n), Act.none.code, 0, 0)
                }
            }
            parallel(tiles, parts: parts) { lo, hi in
                mlk_winograd_output(m, Int64(planeM), Int64(n), Int64(tw), Int64(oh), Int64(ow), Int64(lo), Int64(hi),
                                    bias, yb, act.code, act.p0, act.p1)
            }
        }
    }

    // x (N,H,W,C), w (KH,KW,C/groups,OC) → y (N,OH,OW,OC)
    static func conv(_ s: Step, _ x: UnsafePointer<Float>, _ xs: [Int], _ y: UnsafeMutablePointer<Float>, _ ys: [Int],
                     _ scratch: UnsafeMutablePointer<Float>, _ threads: Int) {
        let (batch, h, w, c) = (xs[0], xs[1], xs[2], xs[3])
        let (kh, kw, cg, oc) = (s.weightShape[0], s.weightShape[1], s.weightShape[2], s.weightShape[3])
        let (oh, ow) = (ys[1], ys[2])
        let ocg = oc / s.groups, k = kh &* kw &* cg
        nonisolated(unsafe) let bias = s.bias.map { UnsafePointer($0.pointer) }
        let act = s.act, st = s.strides, dl = s.dilations, pd = s.pads
        if let d = s.qdepthwise, d.run != nil, isDepthwise(s, xs) {
            quantizedDepthwise(s, d, x, xs, y, ys, scratch, threads)
            return
        }
        if let qw = s.qweights {
            // groups == 1 with int8 weights: as below, on rows quantized in the scratch (after the im2col rows).
            let direct = readsInputDirectly(s)
            let rows = direct ? batch &* h &* w : oh &* ow
            let qscratch = direct ? scratch : scratch + oh &* ow &* k
            // A dynamic quantization's pair comes from the whole input, every image (ConvInteger's input tensor).
            let dynamic = qw.dynamicCodes(x, count: batch &* h &* w &* c)
            // Stored codes (`QuantizedWeights.writesCodes`): an image's bytes are oh · ow · oc apart.
            let codes = qw.writesCodes ? UnsafeMutableRawPointer(y).assumingMemoryBound(to: UInt8.self) : nil
            for b in 0..<(direct ? 1 : batch) {
                quantizedGemm(direct ? x : UnsafePointer(scratch), lda: direct ? c : k, qw, rows: rows, bias: bias,
                              y + b &* oh &* ow &* oc, act: act, scratch: qscratch, threads: threads,
                              prepare: direct ? nil : im2col(s, x + b &* h &* w &* c, xs, ys), dynamic: dynamic,
                              codes: codes.map { $0 + b &* oh &* ow &* oc })
            }
            return
        }
        // Every conv without int8 weights has Winograd weights (stride-1 3×3), packed weights (other groups == 1) or
        // its float weights loaded (Program.compile).
        // A one-channel conv with groups == 1 is also "depthwise" by shape, but its weights were packed for the GEMM
        // below instead of loaded.
        if isDepthwise(s, xs), let depthwiseWeights = s.weight {
            nonisolated(unsafe) let wt = UnsafePointer(depthwiseWeights.pointer)
            let parts = oh * ow * c * kh * kw >= parallelThreshold ? threads : 1
            // Few output rows (7×7 layers) split unevenly: split slices of 64 channels instead.
            let slices = (c + 63) / 64
            if parts > 1 && oh < 6 &* parts && slices >= 6 &* parts {
                for b in 0..<batch {
                    nonisolated(unsafe) let xb = x + b &* h &* w &* c, yb = y + b &* oh &* ow &* oc
                    parallel(slices, parts: parts) { lo, hi in
                        mlk_depthwise_channels(xb, Int64(h), Int64(w), Int64(c), wt, Int64(kh), Int64(kw), bias,
                                               yb, 0, Int64(oh), Int64(ow), Int64(st[0]), Int64(st[1]),
                                               Int64(dl[0]), Int64(dl[1]), Int64(pd[0]), Int64(pd[1]), act.code, act.p0,
                                               act.p1, Int64(lo &* 64), Int64(min(c, hi &* 64)))
                    }
                }
                return
            }
            for b in 0..<batch {
                nonisolated(unsafe) let xb = x + b &* h &* w &* c, yb = y + b &* oh &* ow &* oc
                parallel(oh, parts: parts) { lo, hi in
                    mlk_depthwise(xb, Int64(h), Int64(w), Int64(c), wt, Int64(kh), Int64(kw), bias,
                                  yb, Int64(lo), Int64(hi), Int64(ow), Int64(st[0]), Int64(st[1]),
                                  Int64(dl[0]), Int64(dl[1]), Int64(pd[0]), Int64(pd[1]), act.code, act.p0, act.p1)
                }
            }
            return
        }
        if let u = s.winograd {
            winograd(s, UnsafePointer(u.pointer), x, xs, y, ys, scratch, threads)
            return
        }
        if let packed = s.packed {
            // groups == 1: a GEMM over output pixels with bias and activation in its epilogue. A 1×1 conv reads
            // the whole batch in place; others im2col one image at a time into the scratch, each block of rows
            // just before the GEMM reads it (on the thread that does).
            nonisolated(unsafe) let bp = UnsafePointer(packed.pointer)
            let direct = readsInputDirectly(s)
            let rows = direct ? batch &* h &* w : oh &* ow
            let stem = isStem(s, xs)
            // Palettized weights: decoded by the GEMM when it runs once; else here, once for every image.
            var palette = s.palette
            if let p = palette, stem || (!direct && batch > 1) {
                p.unpack(into: packed.pointer, threads: threads)
                palette = nil
            }
            if stem {
                // A stem (few input channels): interior pixels straight from the input, borders via im2col rows.
                let parts = rows &* oc &* k >= parallelThreshold ? threads : 1
                for b in 0..<batch {
                    nonisolated(unsafe) let xb = x + b &* h &* w &* c, yb = y + b &* rows &* oc, cols = scratch
                    parallel(rows, parts: parts, align: 8) { lo, hi in
                        // Each range's im2col rows in its own part of the scratch.
                        mlk_conv_rows(xb, Int64(h), Int64(w), Int64(c), Int64(kh), Int64(kw), bp, Int64(oc), Int64(ow),
                                      Int64(lo), Int64(hi), Int64(st[0]), Int64(st[1]), Int64(dl[0]), Int64(dl[1]),
                                      Int64(pd[0]), Int64(pd[1]), bias, yb, cols + lo &* k, act.code, act.p0, act.p1)
                    }
                }
                return
            }
            for b in 0..<(direct ? 1 : batch) {
                packedGemm(direct ? x : UnsafePointer(scratch), lda: direct ? c : k, bp, rows: rows, n: oc, k: k,
                           bias: bias, y + b &* oh &* ow &* oc, act: act, threads: threads,
                           prepare: direct ? nil : im2col(s, x + b &* h &* w &* c, xs, ys), palette: palette)
            }
            return
        }
        guard let groupedWeights = s.weight else {
            preconditionFailure("conv '\(s.name)': neither packed nor loaded weights (Program.compile)")
        }
        let wt = UnsafePointer(groupedWeights.pointer)
        if readsInputDirectly(s) {
            // Grouped 1×1 convs read their channel slice in place through lda.
            for g in 0..<s.groups {
                sgemm(batch &* h &* w, ocg, cg, x + g &* cg, c, wt + g &* ocg, oc, y + g &* ocg, oc)
            }
        } else {
            for b in 0..<batch {
                let yb = y + b &* oh &* ow &* oc
                for g in 0..<s.groups {
                    mlk_im2col(x + b &* h &* w &* c, Int64(h), Int64(w), Int64(c), Int64(g &* cg), Int64(cg),
                               Int64(kh), Int64(kw), scratch, Int64(oh), Int64(ow), Int64(s.strides[0]),
                               Int64(s.strides[1]), Int64(s.dilations[0]), Int64(s.dilations[1]),
                               Int64(s.pads[0]), Int64(s.pads[1]))
                    sgemm(oh &* ow, ocg, k, scratch, k, wt + g &* ocg, oc, yb + g &* ocg, oc)
                }
            }
        }
        mlk_bias_act(y, Int64(batch &* oh &* ow), Int64(oc), bias, s.act.code, s.act.p0, s.act.p1)
    }
}
