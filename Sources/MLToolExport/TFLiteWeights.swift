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
/// - any other palette (a float table), and f16: float16, the palette's values rounded to the nearest float16 (the
///   note gives the largest error); a palette with a value beyond float16's range is dequantized to float32.
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
            return .float16(bytes: raw, shape: layout(t.shape, perm, reshape), note: "\(t.name): f16 weights kept as float16 behind a DEQUANTIZE")
        case .int8:
            return int8(t, count: count, perm: perm, reshape: reshape, what: "int8 weights kept as int8")
        case _ where t.dtype.traits.isPalette:
            let kind = t.dtype.name
            if let linear = t.int8TableAsLinear() {
                return int8(linear, count: count, perm: perm, reshape: reshape,
                            what: "\(kind) weights (an int8 table) kept as the int8 values and per-channel scales they equal, exactly,")
            }
            return try float16(t, perm: perm, reshape: reshape)
        default:
            return nil
        }
    }

    /// Linear int8 `t` with TFLite's quantization parameters; nil when TFLite cannot state them (a zero point
    /// outside −128…127, a non-finite scale, a per-channel axis that a reshape moves).
    private static func int8(_ t: StoredTensor, count: Int, perm: [Int]?, reshape: [Int]?, what: String) -> Kept? {
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
                     note: "\(t.name): \(what) (\(perChannel)\(zero)) behind a DEQUANTIZE")
    }

    /// A float-table palette as float16, with its largest rounding error; nil when a value is beyond float16.
    private static func float16(_ t: StoredTensor, perm: [Int]?, reshape: [Int]?) throws -> Kept? {
        var values = try t.floats()
        guard values.allSatisfy({ abs($0) <= Float(Float16.greatestFiniteMagnitude) }) else { return nil }
        if let p = perm { values = WeightLayout.transpose(values, shape: t.shape, perm: p) }
        var worst: Float = 0
        let halves = values.map { v -> UInt16 in
            let h = Float16(v)
            worst = max(worst, abs(Float(h) - v))
            return h.bitPattern.littleEndian
        }
        let note = "\(t.name): \(t.dtype.name) weights (a float table) kept as float16 behind a DEQUANTIZE, largest weight error \(worst)"
        return .float16(bytes: halves.withUnsafeBytes { Array($0) }, shape: layout(t.shape, perm, reshape), note: note)
    }

    private static func layout(_ shape: [Int], _ perm: [Int]?, _ reshape: [Int]?) -> [Int] {
        reshape ?? perm.map { WeightLayout.permuted(shape, $0) } ?? shape
    }
}
