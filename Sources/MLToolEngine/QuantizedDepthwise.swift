import CMLToolCPU
import CMLToolKernels
import MLToolCore

/// A depthwise conv of a QDQ file whose input is a QuantizeLinear → DequantizeLinear pair's output and whose output
/// one per-tensor QuantizeLinear reads: run as onnxruntime's QLinearConv does, on the integers. Its weights are kept as
/// their int8 codes (as floats), and a run takes the input's codes less their zero point (`mlk_grid_codes`: the
/// values are those codes times the scale), sums them with the codes on the float depthwise kernel — every product
/// and partial sum an integer below 2^24, so exact — and requantizes each sum with the file's int32 bias added in
/// int32 (`mlk_requantize_channels`): the codes the QuantizeLinear after it gives, dequantized, bit for bit
/// onnxruntime's.
final class QuantizedDepthwise: @unchecked Sendable {
    /// The weight codes (KH, KW, 1, C) as floats, and each channel's weight scale.
    let codes: [Float]
    let weightScales: [Float]
    let channels: Int
    /// Set once by `Program.readInputCodes`, before any run: the input's scale, the int32 bias codes and multipliers
    /// x_scale · w_scale[c] / y_scale, and the output's code range less its zero point, and scale.
    private(set) var run: (inputScale: Float, bias: [Int32], mult: [Float], lo: Float, hi: Float, scale: Float)?
    /// Whether the output is stored as its 8-bit codes (bytes, code less `lo`), and the u8 zero point of an input
    /// stored as codes (`Program.storeCodes`, set once before any run).
    private(set) var writesCodes = false
    private(set) var storedInput: Int32?

    /// The output's scale and u8 zero point (what a reader of its codes must take), nil unless requantizing.
    var outputCodes: (scale: Float, zeroPoint: Int32)? { run.map { ($0.scale, Int32(-$0.lo)) } }

    /// Stores the requantized output as codes; false unless the conv requantizes.
    func storeOutputCodes() -> Bool {
        guard run != nil else { return false }
        writesCodes = true
        return true
    }

    /// Reads the input as codes stored with `scale` and u8 `zeroPoint`; false unless the conv reads codes of that scale.
    func readStoredCodes(scale: Float, zeroPoint: Int32) -> Bool {
        guard let r = run, r.inputScale == scale, (0...255).contains(zeroPoint) else { return false }
        storedInput = zeroPoint
        return true
    }

    /// Whether a kernel of `taps` taps sums codes of 8 bits and weights in ±127 exactly in float32 (below 2^24), and
    /// the bias is an int32 code (added in int32, as `QuantizedWeights.requantizeOutput`'s).
    static func exact(taps: Int, bias: Float) -> Bool { Double(taps) * 255 * 127 < 16_777_216 && QuantizedWeights.isInt32(bias) }

    /// nil unless `t` is int8 (KH, KW, 1, C) with one finite, positive scale per channel (the last axis) and zero points 0.
    init?(_ t: StoredTensor) {
        guard t.dtype == .int8, t.shape.count == 4, t.shape[2] == 1, let q = t.quant, let s = q.scales,
              q.axis == 3, s.count == t.shape[3], s.allSatisfy({ $0.isFinite && $0 > 0 }),
              (q.zeroPoints ?? []).allSatisfy({ $0 == 0 }), let count = try? Checked.elementCount(t.shape),
              t.bytes.count == count, let base = t.bytes.buffer.baseAddress else { return nil }
        let w = base.assumingMemoryBound(to: Int8.self)
        codes = (0..<count).map { Float(w[$0]) }
        weightScales = s
        channels = t.shape[3]
    }

    /// Runs on the integers with an input of `inputScale` and an output QuantizeLinear of `scale`, `zeroPoint` and
    /// code range `lo`…`hi`, given the float bias; false (nothing set) unless each bias is an integer times
    /// x_scale · w_scale[c] (to float rounding: a QDQ file's dequantized int32 bias) and the sums stay exact.
    @discardableResult
    func requantize(inputScale: Float, bias: UnsafePointer<Float>?, taps: Int, scale: Float, zeroPoint: Float, lo: Float,
                    hi: Float) -> Bool {
        guard run == nil, inputScale.isFinite, inputScale > 0, scale.isFinite, scale > 0, lo <= zeroPoint, zeroPoint <= hi,
              hi - lo <= 255 else { return false }
        var codes = [Int32](repeating: 0, count: channels), mult = [Float](repeating: 0, count: channels)
        for c in 0..<channels {
            let s = inputScale * weightScales[c], b = bias?[c] ?? 0
            let code = (b / s).rounded(.toNearestOrEven)
            guard s.isFinite, s > 0, QuantizedWeights.isCode(b / s, code), Self.exact(taps: taps, bias: code) else { return false }
            codes[c] = Int32(code)
            mult[c] = s / scale
            guard mult[c].isFinite else { return false }
        }
        run = (inputScale, codes, mult, lo - zeroPoint, hi - zeroPoint, scale)
        return true
    }
}

extension Fast {
    /// Floats of scratch a requantizing depthwise conv takes: one image's input codes, and for an output stored as
    /// codes one image's sums (each band uses one output row of its own); reading and writing codes, at least one
    /// image's padded input (`paddedInput`, when the conv pads).
    static func quantizedDepthwiseScratch(_ s: Step, _ d: QuantizedDepthwise, _ xs: [Int], _ ys: [Int]) -> Int {
        let centred = xs[1] &* xs[2] &* xs[3] &+ (d.writesCodes ? ys[1] &* ys[2] &* ys[3] : 0)
        guard d.storedInput != nil && d.writesCodes else { return centred }
        // Room for either path: the level that runs a step may not be the planning thread's.
        let band = paddedInput(s, xs, ys)
        return max(centred, band.needed ? (band.rows &* band.cols &* xs[3] &+ 3) / 4 : 0)
    }

    /// Whether a depthwise conv between tensors stored as codes runs `mlk_qdepthwise_codes` on them: always with
    /// AVX-512 (`codesToCodes`); on AVX2 when strided, where each input code is read by a quarter of the taps' outputs,
    /// so centring every code into floats first costs more than widening it per tap, and 3×3 stride 1, whose runs of 4
    /// pixels widen each input column once. Measured on a Zen 3 (AVX2, one thread, EfficientNet-Lite0's layers, the
    /// kernels alone, against centring the input into floats and the float kernels): 3×3 stride 2 at 112×112×96 0.20
    /// vs 0.42 ms, 5×5 stride 2 at 56×56×144 0.19 vs 0.23 ms; 3×3 stride 1 at 112×112×32 0.242 vs 0.254 ms, 56×56×144
    /// 0.273 vs 0.315, 14×14×480 0.058 vs 0.062; 5×5 stride 1 loses (28×28×240 0.236 vs 0.212 ms, 14×14×672 0.196 vs
    /// 0.153, 7×7×1152 0.098 vs 0.062).
    static func readsCodesDirectly(_ s: Step) -> Bool {
        padsFirst || s.strides[0] &* s.strides[1] >= 4
            || (s.strides == [1, 1] && s.dilations == [1, 1] && s.weightShape[0] == 3 && s.weightShape[1] == 3)
    }

    /// Whether `mlk_qdepthwise_codes` runs on a padded input (its AVX-512 level), so `codesToCodes` pads it first
    /// (on AVX2 it reads around the borders of the input as given). Asked per call: a thread's CPU level can change.
    static var padsFirst: Bool { mlk_cpu_has(Int32(MLK_CPU_AVX512)) != 0 }

    /// The input a depthwise conv's outputs read, padding included: rows from −pads[0], columns from −pads[1]; needed
    /// (to be made by `mlk_qdepthwise_pad`) unless it lies inside the image.
    static func paddedInput(_ s: Step, _ xs: [Int], _ ys: [Int]) -> (rows: Int, cols: Int, needed: Bool) {
        let rows = (ys[1] &- 1) &* s.strides[0] &+ (s.weightShape[0] &- 1) &* s.dilations[0] &+ 1
        let cols = (ys[2] &- 1) &* s.strides[1] &+ (s.weightShape[1] &- 1) &* s.dilations[1] &+ 1
        return (rows, cols, s.pads[0] != 0 || s.pads[1] != 0 || rows > xs[1] || cols > xs[2])
    }

    /// Whether a depthwise conv's parts take blocks of channels (every output row) rather than bands of rows: on a
    /// small map (14 × 14 and below) a few rows per part leave the threads unevenly loaded and their runs of pixels
    /// short. Intel Xeon (AVX-512 VNNI), EfficientNet-Lite0 QDQ, 2 threads, batch 1, 5 interleaved runs: 262–310
    /// images/s against 233–296 with bands of rows everywhere (a small gain, inside the machine's noise).
    static func splitsChannels(oh: Int, ow: Int, c: Int, parts: Int) -> Bool {
        parts > 1 && oh &* ow <= 256 && c >= 64
    }

    /// Codes in, codes out (`mlk_qdepthwise_codes`): with AVX-512 each image's input padded once into the scratch with
    /// its zero point (when the conv pads; the threads pad bands of its rows), then bands of output rows on the threads
    /// (blocks of channels on a small map: `splitsChannels`), every pixel read in place. On Zen
    /// 4 (AVX-512, one thread, EfficientNet-Lite0's layers, the kernels alone, best of 300, padding included) against
    /// the AVX2 kernel around the borders, which 5×5 stride 1 did not even take (the float kernels were faster):
    /// 3×3 stride 1 at 112×112×32 0.151–0.157 vs 0.198 ms, 56×56×144 0.174 vs 0.222; 3×3 stride 2 at 112×112×96
    /// 0.143–0.170 vs 0.171; 5×5 stride 1 at 28×28×240 0.127–0.143 vs 0.197, 14×14×672 0.110–0.112 vs 0.156; 5×5
    /// stride 2 at 56×56×144 0.124–0.224 vs 0.155–0.234 (runs on a loaded machine disagree: no clear winner there).
    static func codesToCodes(_ s: Step, _ d: QuantizedDepthwise, zp: Int32, _ x: UnsafePointer<UInt8>, _ xs: [Int],
                             _ y: UnsafeMutablePointer<UInt8>, _ ys: [Int], _ scratch: UnsafeMutablePointer<Float>,
                             parts: Int) {
        guard let r = d.run else { return }
        let (batch, h, w, c) = (xs[0], xs[1], xs[2], xs[3])
        let (kh, kw, oh, ow) = (s.weightShape[0], s.weightShape[1], ys[1], ys[2])
        let st = s.strides, dl = s.dilations
        var band = paddedInput(s, xs, ys)
        band.needed = band.needed && padsFirst
        nonisolated(unsafe) let padded = UnsafeMutableRawPointer(scratch).assumingMemoryBound(to: UInt8.self)
        let (ih, iw, pt, pl) = band.needed ? (band.rows, band.cols, 0, 0) : (h, w, s.pads[0], s.pads[1])
        d.codes.withUnsafeBufferPointer { wt in
            r.bias.withUnsafeBufferPointer { bias in
                r.mult.withUnsafeBufferPointer { mult in
                    nonisolated(unsafe) let (wt, bias, mult) = (wt.baseAddress, bias.baseAddress, mult.baseAddress)
                    for b in 0..<batch {
                        nonisolated(unsafe) var input = x + b &* h &* w &* c
                        if band.needed {
                            nonisolated(unsafe) let image = input
                            let (cols, top, left) = (band.cols, s.pads[0], s.pads[1])
                            parallel(band.rows, parts: parts) { lo, hi in
                                mlk_qdepthwise_pad(image, Int64(h), Int64(w), Int64(c), UInt8(zp), Int64(lo &- top),
                                                   Int64(hi &- lo), Int64(-left), Int64(cols), padded + lo &* cols &* c)
                            }
                            input = UnsafePointer(padded)
                        }
                        nonisolated(unsafe) let (source, out) = (input, y + b &* oh &* ow &* c)
                        let rows: @Sendable (Int, Int, Int, Int) -> Void = { r0, r1, c0, c1 in
                            mlk_qdepthwise_codes(source, Int64(ih), Int64(iw), Int64(c), zp, wt, Int64(kh), Int64(kw),
                                                 bias, mult, r.lo, r.hi, out, Int64(r0), Int64(r1), Int64(ow), Int64(st[0]),
                                                 Int64(st[1]), Int64(dl[0]), Int64(dl[1]), Int64(pt), Int64(pl), Int64(c0),
                                                 Int64(c1))
                        }
                        if splitsChannels(oh: oh, ow: ow, c: c, parts: parts) {
                            parallel(c, parts: parts, align: 16) { lo, hi in rows(0, oh, lo, hi) }
                        } else {
                            parallel(oh, parts: parts) { lo, hi in rows(lo, hi, 0, c) }
                        }
                    }
                }
            }
        }
    }

    /// A depthwise conv on the integers (`QuantizedDepthwise`), an image at a time: its codes into the scratch, then
    /// bands of output rows summed and requantized on the thread that sums them. An input stored as codes is centred
    /// from its bytes (`mlk_codes_centred`); an output stored as codes is summed a row at a time into the band's
    /// room in the scratch and requantized from there into bytes (`mlk_requantize_channels_codes`).
    static func quantizedDepthwise(_ s: Step, _ d: QuantizedDepthwise, _ x: UnsafePointer<Float>, _ xs: [Int],
                                   _ y: UnsafeMutablePointer<Float>, _ ys: [Int], _ scratch: UnsafeMutablePointer<Float>,
                                   _ threads: Int) {
        guard let r = d.run else { return }   // checked by the caller
        let (batch, h, w, c) = (xs[0], xs[1], xs[2], xs[3])
        let (kh, kw, oh, ow) = (s.weightShape[0], s.weightShape[1], ys[1], ys[2])
        let st = s.strides, dl = s.dilations, pd = s.pads
        let parts = oh &* ow &* c &* kh &* kw >= parallelThreshold ? threads : 1
        nonisolated(unsafe) let codes = scratch, sums = scratch + h &* w &* c
        nonisolated(unsafe) let xq = UnsafeRawPointer(x).assumingMemoryBound(to: UInt8.self)
        nonisolated(unsafe) let yq = UnsafeMutableRawPointer(y).assumingMemoryBound(to: UInt8.self)
        let stored = d.storedInput, writesCodes = d.writesCodes
        if let zp = stored, writesCodes, Self.readsCodesDirectly(s) {
            codesToCodes(s, d, zp: zp, xq, xs, yq, ys, scratch, parts: parts)
            return
        }
        for b in 0..<batch {
            nonisolated(unsafe) let xb = x + b &* h &* w &* c, yb = y + b &* oh &* ow &* c
            let image = b &* h &* w &* c, outImage = b &* oh &* ow &* c
            parallel(h, parts: parts) { lo, hi in
                if let zp = stored {
                    mlk_codes_centred(xq + (image &+ lo &* w &* c), codes + lo &* w &* c, Int64((hi &- lo) &* w &* c), zp)
                } else {
                    mlk_grid_codes(xb + lo &* w &* c, codes + lo &* w &* c, Int64((hi &- lo) &* w &* c), 1 / r.inputScale)
                }
            }
            if writesCodes {
                d.codes.withUnsafeBufferPointer { wt in
                    r.bias.withUnsafeBufferPointer { bias in
                        r.mult.withUnsafeBufferPointer { mult in
                            nonisolated(unsafe) let (wt, bias, mult) = (wt.baseAddress, bias.baseAddress, mult.baseAddress)
                            parallel(oh, parts: parts) { lo, hi in
                                let row = sums + lo &* ow &* c
                                for o in lo..<hi {
                                    mlk_depthwise(codes, Int64(h), Int64(w), Int64(c), wt, Int64(kh), Int64(kw), nil,
                                                  row - o &* ow &* c, Int64(o), Int64(o &+ 1), Int64(ow), Int64(st[0]),
                                                  Int64(st[1]), Int64(dl[0]), Int64(dl[1]), Int64(pd[0]), Int64(pd[1]),
                                                  Act.none.code, 0, 0)
                                    mlk_requantize_channels_codes(row, Int64(ow), Int64(c), bias, mult, r.lo, r.hi,
                                                                  yq + (outImage &+ o &* ow &* c))
                                }
                            }
                        }
                    }
                }
                continue
            }
            d.codes.withUnsafeBufferPointer { wt in
                r.bias.withUnsafeBufferPointer { bias in
                    r.mult.withUnsafeBufferPointer { mult in
                        nonisolated(unsafe) let (wt, bias, mult) = (wt.baseAddress, bias.baseAddress, mult.baseAddress)
                        parallel(oh, parts: parts) { lo, hi in
                            mlk_depthwise(codes, Int64(h), Int64(w), Int64(c), wt, Int64(kh), Int64(kw), nil, yb, Int64(lo),
                                          Int64(hi), Int64(ow), Int64(st[0]), Int64(st[1]), Int64(dl[0]), Int64(dl[1]),
                                          Int64(pd[0]), Int64(pd[1]), Act.none.code, 0, 0)
                            mlk_requantize_channels(yb + lo &* ow &* c, Int64((hi &- lo) &* ow), Int64(c), bias, mult, r.lo,
                                                    r.hi, r.scale)
                        }
                    }
                }
            }
        }
    }
}
