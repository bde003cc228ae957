import MLToolCore

/// Linear int8: q = round(w / scale) + zeroPoint, clamped to [-128, 127]; real = scale · (q − zeroPoint).
/// Symmetric: zeroPoint 0 and scale = max|w| / 127, so the error is at most scale / 2 per element.
/// Asymmetric: scale = (max − min) / 255 with the range widened to include 0, zeroPoint = round(−128 − min / scale).
/// Scales are rounded up to bfloat16 before use (stored in half the bytes, `QuantParams.scalesType`), so the
/// bound holds for the stored scale, which is at most 2⁻⁸ larger than the exact one.
public enum LinearQuantizer {
    public static func quantize(_ t: StoredTensor, values w: [Float], axis: Int?, asymmetric: Bool) -> StoredTensor {
        let (outer, channels, inner) = split(t.shape, axis)
        var lo = [Float](repeating: 0, count: channels), hi = [Float](repeating: 0, count: channels)
        var i = 0
        for _ in 0..<outer {
            for c in 0..<channels {
                for _ in 0..<inner { lo[c] = min(lo[c], w[i]); hi[c] = max(hi[c], w[i]); i += 1 }
            }
        }
        var scales = [Float](repeating: 1, count: channels), zps = [Int](repeating: 0, count: channels)
        for c in 0..<channels {
            if asymmetric {
                let range = hi[c] - lo[c]
                scales[c] = range > 0 ? range / 255 : 1
                zps[c] = Int(max(-128, min(127, (-128 - lo[c] / scales[c]).rounded())))
            } else {
                let m = max(-lo[c], hi[c])
                scales[c] = m > 0 ? m / 127 : 1
            }
            scales[c] = bfloat16Up(scales[c])
            if asymmetric { zps[c] = Int(max(-128, min(127, (-128 - lo[c] / scales[c]).rounded()))) }
        }
        var q = [UInt8](repeating: 0, count: w.count)
        i = 0
        for _ in 0..<outer {
            for c in 0..<channels {
                let s = scales[c], z = Float(zps[c])
                for _ in 0..<inner {
                    let v = max(-128, min(127, (w[i] / s).rounded() + z))
                    q[i] = UInt8(bitPattern: Int8(v)); i += 1
                }
            }
        }
        return StoredTensor(name: t.name, dtype: .int8, shape: t.shape,
                            quant: QuantParams(axis: axis, scales: scales, zeroPoints: asymmetric ? zps : nil, scalesType: "bf16"),
                            bytes: TensorBytes(copying: q))
    }

    /// The smallest bfloat16 value ≥ `x` (x > 0, finite): a scale that never shrinks the covered range.
    static func bfloat16Up(_ x: Float) -> Float {
        var r = QuantParams.bfloat16Rounded(x)
        if r < x { r = Float(bitPattern: r.bitPattern &+ 0x1_0000) }
        return r.isFinite ? r : QuantParams.bfloat16Rounded(x)
    }

    /// (product of dims before axis, dim at axis, product after) — (1, 1, count) for per-tensor.
    static func split(_ shape: [Int], _ axis: Int?) -> (Int, Int, Int) {
        guard let a = axis else { return (1, 1, shape.reduce(1, *)) }
        return (shape[..<a].reduce(1, *), shape[a], shape[(a + 1)...].reduce(1, *))
    }
}
