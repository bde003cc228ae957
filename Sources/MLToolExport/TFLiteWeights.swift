import MLToolCore

/// How `TFLiteLowering` keeps a compressed weight compressed: the stored tensor (int8 with TFLite
/// QuantizationParameters, or float16) that a DEQUANTIZE turns into the float32 weight the layer reads.
///
/// Why DEQUANTIZE and not TFLite's dynamic-range ("hybrid") kernels: a hybrid CONV_2D, DEPTHWISE_CONV_2D or
/// FULLY_CONNECTED quantizes its float input to int8 on the fly, per row and by its own rule, so its outputs move
/// away from the float compute `mltool predict` states for the same int8 weights (by about the input's rounding); a
/// DEQUANTIZE in front of the weight computes scale[c] · (q − zero_point[c]) in float32 as mltool does, runs in every
/// LiteRT build for the three ops, keeps mltool's zero points (asymmetric int8 included: DEQUANTIZE takes any zero
/// point, TFLite's int8 conv kernels only 0) and keeps the file at a quarter of float's size. Activations stay
/// float32: an mltool int8 model records no activation ranges, so there is no full-integer export.
///
/// - int8 (per tensor, or per channel along any axis): the codes as int8, mltool's scales and zero points; the
///   quantized_dimension follows the axis through the layer's layout (conv OHWI: 0, depthwise (1, KH, KW, C·m): 3,
///   fully connected (out, in): 0).
/// - a palette whose table is int8 integers scaled per channel (`mltool quantize --bits 4`, `--lut int8`, the
///   default): the int8 values and per-channel scales it equals, exactly (`StoredTensor.int8TableAsLinear`).
/// - any other palette (a float table): int8 with symmetric per-channel scales (max |w| / 127 along the last axis)
///   when that is at least as exact as float16 (a table whose values sit on such a grid, as a symmetric 1-bit one),
///   else float16, the values rounded to the nearest float16; the note gives the largest weight error. A palette
///   with a value beyond float16's range is dequantized to float32.
/// - f16: float16 as stored.
enum TFLiteWeights {
    enum Kept {
        case int8(bytes: [UInt8], shape: [Int], quantization: TFLiteProgram.Quantization, note: String)
        case float16(bytes: [UInt8], shape: [Int], note: String)
    }

    /// `t` kept compressed, transposed by `perm` or given the shape `reshape` (same element order); nil when it is
    /// float32 or cannot be kept (the caller dequantizes it to float32, with a note).
    static func kept(_ t: StoredTensor, perm: [Int]?, reshape: [Int]?) throws -> Kept? {
        let count = try Checked.elementCount(t.shape, what: "weight '\(t.name)'")
        guard count > 0, t.bytes.count >= (try t.dtype.traits.byteCount(elements: count)) else { return nil }
        switch t.dtype {
        case .f16:
            let raw = perm.map { WeightLayout.transpose(t.bytes.buffer, shape: t.shape, perm: $0, width: 2) }
                ?? Array(t.bytes.buffer.prefix(count * 2))
            return .float16(bytes: raw, shape: layout(t.shape, perm, reshape),
                            note: "\(t.name): f16 weights kept as float16 behind a DEQUANTIZE")
        case .int8:
            return int8(t, count: count, perm: perm, reshape: reshape, what: "int8 weights kept as int8", detail: "")
        case _ where t.dtype.traits.isPalette:
            let kind = t.dtype.name
            if let linear = t.int8TableAsLinear() {
                return int8(linear, count: count, perm: perm, reshape: reshape,
                            what: "\(kind) weights (an int8 table) kept as the int8 values and per-channel scales they equal",
                            detail: ", exact")
            }
            return try nearestInt8(t, count: count, perm: perm, reshape: reshape)
        default:
            return nil
        }
    }

    /// Linear int8 `t` with TFLite's quantization parameters; nil when TFLite cannot state them (a zero point
    /// outside −128…127, a non-finite scale, a per-channel axis that a reshape moves).
    private static func int8(_ t: StoredTensor, count: Int, perm: [Int]?, reshape: [Int]?, what: String, detail: String) -> Kept? {
        guard let q = t.quant, let scales = q.scales, !scales.isEmpty, scales.allSatisfy(\.isFinite) else { return nil }
        let zeroPoints = q.zeroPoints ?? [Int](repeating: 0, count: scales.count)
        guard zeroPoints.count == scales.count, zeroPoints.allSatisfy({ (-128...127).contains($0) }) else { return nil }
        var axis = 0
        if let a = q.axis {
            guard a >= 0, a < t.shape.count, t.shape[a] == scales.count else { return nil }
            axis = a
        } else if scales.count != 1 {
            return nil
        }
        var shape = t.shape
        var bytes = Array(t.bytes.buffer.prefix(count))
        if let p = perm {
            bytes = WeightLayout.transpose(t.bytes.buffer, shape: t.shape, perm: p, width: 1)
            shape = WeightLayout.permuted(shape, p)
            axis = p.firstIndex(of: axis) ?? 0
        }
        if let r = reshape {
            // The same element order: a per-channel axis keeps its meaning only as the last axis, of the same size.
            if scales.count > 1 {
                guard axis == shape.count - 1, r.last == shape.last else { return nil }
                axis = r.count - 1
            }
            shape = r
        }
        let perChannel = scales.count > 1 ? "per-channel scales on axis \(axis)" : "one scale"
        let zero = zeroPoints.allSatisfy { $0 == 0 } ? "" : ", zero points kept"
        return .int8(bytes: bytes, shape: shape,
                     quantization: TFLiteProgram.Quantization(scales: scales, zeroPoints: zeroPoints.map { Int64($0) }, axis: axis),
                     note: "\(t.name): \(what) (\(perChannel)\(zero)) behind a DEQUANTIZE\(detail)")
    }

    /// A float-table palette as int8 with symmetric per-channel scales on its last axis when their largest error is
    /// no larger than float16's, else as float16; nil when a value is beyond float16.
    private static func nearestInt8(_ t: StoredTensor, count: Int, perm: [Int]?, reshape: [Int]?) throws -> Kept? {
        var values = try t.floats()
        guard let channels = t.shape.last, channels > 0, values.allSatisfy({ abs($0) <= Float(Float16.greatestFiniteMagnitude) }) else {
            return nil
        }
        var scales = [Float](repeating: 0, count: channels)
        for (i, v) in values.enumerated() { scales[i % channels] = max(scales[i % channels], abs(v)) }
        scales = scales.map { $0 > 0 ? $0 / 127 : 1 }
        var codes = [UInt8](), int8Error: Float = 0, halfError: Float = 0
        codes.reserveCapacity(count)
        for (i, v) in values.enumerated() {
            let s = scales[i % channels], q = max(-127, min(127, (v / s).rounded()))
            codes.append(UInt8(bitPattern: Int8(q)))
            int8Error = max(int8Error, abs(s * q - v))
            halfError = max(halfError, abs(Float(Float16(v)) - v))
        }
        let kind = "\(t.name): \(t.dtype.name) weights (a float table)"
        if int8Error <= halfError {
            let linear = StoredTensor(name: t.name, dtype: .int8, shape: t.shape,
                                      quant: QuantParams(axis: t.shape.count - 1, scales: scales), bytes: TensorBytes(copying: codes))
            return int8(linear, count: count, perm: perm, reshape: reshape, what: "\(t.dtype.name) weights (a float table) kept as int8",
                        detail: ", largest weight error \(int8Error) (float16: \(halfError))")
        }
        if let p = perm { values = WeightLayout.transpose(values, shape: t.shape, perm: p) }
        let halves = values.map { Float16($0).bitPattern.littleEndian }
        return .float16(bytes: halves.withUnsafeBytes { Array($0) }, shape: layout(t.shape, perm, reshape),
                        note: "\(kind) kept as float16 behind a DEQUANTIZE, largest weight error \(halfError) (int8: \(int8Error))")
    }

    private static func layout(_ shape: [Int], _ perm: [Int]?, _ reshape: [Int]?) -> [Int] {
        reshape ?? perm.map { WeightLayout.permuted(shape, $0) } ?? shape
    }
}
