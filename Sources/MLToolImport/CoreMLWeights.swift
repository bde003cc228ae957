import CCoreMLProto
import CProtobufC
import MLToolCore

/// Decodes Core ML WeightParams (float, half, linear-quantized or look-up-table) into float32 values.
struct CoreMLWeightReader {
    let file: String

    /// The `count` values of `w`; `channels` is the size of the first axis (for per-channel linear parameters).
    func floats(_ w: UnsafeMutablePointer<CoreML__Specification__WeightParams>?, count: Int, channels: Int,
                place: String) throws -> [Float] {
        guard let p = w?.pointee else {
            throw ImportError.invalid(file: file, place: place, expected: "\(count) weights", actual: "none")
        }
        if p.n_floatvalue > 0 {
            guard p.n_floatvalue == count, let v = p.floatvalue else { throw bad(place, count, "\(p.n_floatvalue) floats") }
            return Array(UnsafeBufferPointer(start: v, count: count))
        }
        if p.float16value.len > 0 {
            guard p.float16value.len == count * 2, let d = p.float16value.data else {
                throw bad(place, count, "\(p.float16value.len) bytes of half floats")
            }
            let raw = UnsafeRawBufferPointer(start: d, count: count * 2)
            return (0..<count).map { Float(Float16(bitPattern: raw.loadUnaligned(fromByteOffset: $0 &* 2, as: UInt16.self))) }
        }
        guard let q = p.quantization?.pointee, p.rawvalue.len > 0, let d = p.rawvalue.data else {
            if count == 0 { return [] }
            throw bad(place, count, "no values (int8RawValue and other encodings are not supported)")
        }
        let bits = Int(clamping: q.numberofbits)
        guard (1...8).contains(bits) else {
            throw ImportError.invalid(file: file, place: place + " numberOfBits", expected: "1…8", actual: "\(q.numberofbits)")
        }
        let (needBits, o1) = count.multipliedReportingOverflow(by: bits)
        guard !o1, p.rawvalue.len * 8 >= needBits else { throw bad(place, count, "\(p.rawvalue.len) bytes of \(bits)-bit codes") }
        let raw = UnsafeRawBufferPointer(start: d, count: p.rawvalue.len)
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
            return (0..<count).map { i in
                let c = i / per
                return s[ns == 1 ? 0 : c] * Float(code(i)) + b[nb == 1 ? 0 : c]
            }
        }
        if let lut = q.lookuptablequantization?.pointee {
            guard lut.n_floatvalue == 1 << bits, let t = lut.floatvalue else {
                throw ImportError.invalid(file: file, place: place + " look-up table", expected: "\(1 << bits) values", actual: "\(lut.n_floatvalue)")
            }
            return (0..<count).map { t[code($0)] }
        }
        throw bad(place, count, "quantized codes without linear or look-up-table parameters")
    }

    private func bad(_ place: String, _ count: Int, _ actual: String) -> ImportError {
        .invalid(file: file, place: place, expected: "\(count) weights", actual: actual)
    }
}
