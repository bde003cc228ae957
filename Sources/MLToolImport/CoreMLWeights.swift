import CCoreMLProto
import CProtobufC
import MLToolCore

/// Decodes Core ML WeightParams (float32, float16, or `quantization` codes of 1–8 bits, linear or look-up table)
/// into constants of a given shape. Quantized weights keep their parameters where mltool's own storage holds them
/// exactly: linear codes as int8 (integral zero points), tables as palettes (one table per tensor).
struct CoreMLWeightReader {
    let file: String

    /// The weights of `w` with `shape` (channel-first; `shape[0]` is the output channels that per-channel linear
    /// parameters follow).
    func constant(_ w: UnsafeMutablePointer<CoreML__Specification__WeightParams>?, shape: [Int], place: String) throws -> ONNXConstant {
        let count = try Checked.elementCount(shape, what: "\(file): \(place)")
        let channels = shape.first ?? 1
        guard let p = w?.pointee else {
            throw ImportError.invalid(file: file, place: place, expected: "\(count) weights", actual: "none")
        }
        if p.n_floatvalue > 0 {
            guard p.n_floatvalue == count, let v = p.floatvalue else { throw bad(place, count, "\(p.n_floatvalue) floats") }
            return ONNXConstant(shape: shape, values: UnsafeBufferPointer(start: v, count: count).map(Double.init))
        }
        if p.float16value.len > 0 {
            guard p.float16value.len == count &* 2, let d = p.float16value.data else {
                throw bad(place, count, "\(p.float16value.len) bytes of half floats")
            }
            let raw = UnsafeRawBufferPointer(start: d, count: count &* 2)
            return ONNXConstant(shape: shape, values: (0..<count).map {
                Double(Float(Float16(bitPattern: UInt16(littleEndian: raw.loadUnaligned(fromByteOffset: $0 &* 2, as: UInt16.self)))))
            })
        }
        guard let q = p.quantization?.pointee, p.rawvalue.len > 0, let d = p.rawvalue.data else {
            if count == 0 { return ONNXConstant(shape: shape, values: []) }
            throw bad(place, count, p.int8rawvalue.len > 0 ? "int8RawValue (dynamic-quantization weights are not supported)" : "no values")
        }
        let bits = Int(clamping: q.numberofbits)
        guard (1...8).contains(bits) else {
            throw ImportError.invalid(file: file, place: place + " numberOfBits", expected: "1…8", actual: "\(q.numberofbits)")
        }
        let (needBits, o1) = count.multipliedReportingOverflow(by: bits)
        guard !o1, p.rawvalue.len >= (needBits + 7) / 8 else { throw bad(place, count, "\(p.rawvalue.len) bytes of \(bits)-bit codes") }
        let raw = UnsafeRawBufferPointer(start: d, count: p.rawvalue.len)
        // Core ML packs codes most significant bit first: stream bit j is bit 7 − (j mod 8) of byte j / 8.
        func code(_ i: Int) -> Int {
            var v = 0
            var j = i &* bits
            for _ in 0..<bits {
                v = (v << 1) | Int((raw[j >> 3] >> UInt8(7 &- (j & 7))) & 1)
                j &+= 1
            }
            return v
        }
        if let lin = q.linearquantization?.pointee {
            let ns = lin.n_scale, nb = lin.n_bias
            guard ns == 1 || ns == channels, nb == 1 || nb == channels, let s = lin.scale, let b = lin.bias, channels > 0,
                  count % channels == 0 else {
                throw ImportError.invalid(file: file, place: place + " linear quantization", expected: "1 or \(channels) scales and biases",
                                          actual: "\(ns) scales, \(nb) biases")
            }
            let per = count / channels
            let quant = linearQuant(scales: (0..<channels).map { s[ns == 1 ? 0 : $0] }, biases: (0..<channels).map { b[nb == 1 ? 0 : $0] },
                                    bits: bits, perTensor: ns == 1 && nb == 1)
            var c = ONNXConstant(shape: shape, values: (0..<count).map { i in
                let ch = i / per
                if let q = quant, q.lut == nil {
                    // As int8: s·((q − 128) − z), which differs from s·q + b by float rounding only.
                    return Double(q.scales[ch] * (Float(code(i) - 128) - Float(q.zeroPoints[ch])))
                }
                return Double(s[ns == 1 ? 0 : ch] * Float(code(i)) + b[nb == 1 ? 0 : ch])
            })
            c.quant = quant
            return c
        }
        if let lut = q.lookuptablequantization?.pointee {
            guard lut.n_floatvalue == 1 << bits, let t = lut.floatvalue else {
                throw ImportError.invalid(file: file, place: place + " look-up table", expected: "\(1 << bits) values", actual: "\(lut.n_floatvalue)")
            }
            let table = Array(UnsafeBufferPointer(start: t, count: 1 << bits))
            var c = ONNXConstant(shape: shape, values: (0..<count).map { Double(table[code($0)]) })
            c.quant = .init(axis: nil, scales: [], zeroPoints: [], lut: table, lutBits: bits)
            return c
        }
        throw bad(place, count, "quantized codes without linear or look-up-table parameters")
    }

    /// How linear codes s·q + b (q unsigned) are kept: per tensor as a palette (its 2^bits values, exact by
    /// construction); per channel as int8 q − 128 with zero point −b/s − 128 when that is an integer within 1e-4
    /// (the values are then computed by the int8 formula, equal to Core ML's up to float rounding); else float32.
    func linearQuant(scales: [Float], biases: [Float], bits: Int, perTensor: Bool) -> ONNXConstant.Quant? {
        if perTensor, let s = scales.first, let b = biases.first {
            return .init(axis: nil, scales: [], zeroPoints: [], lut: (0..<(1 << bits)).map { s * Float($0) + b }, lutBits: bits)
        }
        var zeroPoints: [Int] = []
        for (s, b) in zip(scales, biases) {
            guard s != 0, s.isFinite, b.isFinite else { return nil }
            let exact = -Double(b) / Double(s), z = exact.rounded()
            guard abs(z) < 1000, abs(exact - z) <= 1e-4 else { return nil }
            zeroPoints.append(Int(z) - 128)
        }
        guard zeroPoints.allSatisfy({ (-128...127).contains($0) }) else { return nil }
        return .init(axis: 0, scales: scales, zeroPoints: zeroPoints)
    }

    private func bad(_ place: String, _ count: Int, _ actual: String) -> ImportError {
        .invalid(file: file, place: place, expected: "\(count) weights", actual: actual)
    }
}
