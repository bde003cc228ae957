import MLToolCore

extension CoreMLProgram.Weights {
    /// Weights of `t` laid out by `perm` (nil: as stored), keeping int8, f16 and single-table palettes compressed.
    /// The quantization axis must become the first axis (Core ML's output channels); otherwise floats are written.
    static func from(_ t: StoredTensor, perm: [Int]?, notes: inout [String]) throws -> Self {
        let shape = t.shape
        let count = try Checked.elementCount(shape, what: "weight '\(t.name)'")
        let need = try t.dtype.traits.byteCount(elements: count)
        guard t.bytes.count >= need else {
            throw CoreError.truncated(file: "", offset: 0, needed: need, length: t.bytes.count, what: "weight '\(t.name)'")
        }
        let outShape = perm.map { WeightLayout.permuted(shape, $0) } ?? shape
        let newAxis = t.quant?.axis.map { a in perm?.firstIndex(of: a) ?? a }
        func transposed(_ raw: UnsafeRawBufferPointer, width: Int) -> [UInt8] {
            perm.map { WeightLayout.transpose(raw, shape: shape, perm: $0, width: width) } ?? Array(raw.prefix(count * width))
        }
        switch t.dtype {
        case .f32:
            break
        case .f16:
            return .float16(transposed(t.bytes.buffer, width: 2))
        case .int8:
            guard let q = t.quant, let scales = q.scales, newAxis == nil || newAxis == 0,
                  scales.count == (newAxis == nil ? 1 : outShape[0]),
                  (q.zeroPoints ?? scales.map { _ in 0 }).count == scales.count else {
                notes.append("\(t.name): int8 weights written as float32 (quantized along an axis other than the output channels)")
                break
            }
            let zps = q.zeroPoints ?? [Int](repeating: 0, count: scales.count)
            // int8 q with real = s·(q − z) ↔ uint8 u = q + 128 with real = s·u − s·(128 + z).
            let codes = transposed(t.bytes.buffer, width: 1).map { $0 ^ 0x80 }
            let bias = zip(scales, zps).map { s, z in -s * Float(128 + z) }
            return .linear(codes: codes, scale: scales, bias: bias)
        case .palette1, .palette2, .palette4, .palette6, .palette8:
            // A palette with an int8 table is exactly int8 weights with its channel scales: Core ML's linear form.
            if let linear = t.int8TableAsLinear() { return try from(linear, perm: perm, notes: &notes) }
            let bits = t.dtype.traits.bits
            guard let lut = t.quant?.lut, lut.count == 1 << bits, t.quant?.scales == nil else {
                notes.append("\(t.name): per-group or per-channel-scaled palettes written as float32 (Core ML takes one look-up table per weight and no scales)")
                break
            }
            var indices = [UInt8](repeating: 0, count: count)
            for i in 0..<count { indices[i] = UInt8(PackedBits.get(t.bytes.buffer, index: i, bits: bits)) }
            let ordered = indices.withUnsafeBytes { transposed($0, width: 1) }
            return .lookupTable(bits: bits, packed: packMSBFirst(ordered, bits: bits), table: lut)
        default:
            notes.append("\(t.name): \(t.dtype.name) weights written as float32")
        }
        var values = try t.floats()
        if let p = perm { values = WeightLayout.transpose(values, shape: shape, perm: p) }
        return .float(values)
    }

    /// Core ML's bit order: element i's bits, most significant first, continue the stream where the previous
    /// element ended; stream bit j is bit (7 − j mod 8) of byte j / 8.
    static func packMSBFirst(_ indices: [UInt8], bits: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: (indices.count * bits + 7) / 8)
        var j = 0
        for v in indices {
            for b in stride(from: bits - 1, through: 0, by: -1) {
                if (Int(v) >> b) & 1 == 1 { out[j >> 3] |= UInt8(0x80) >> UInt8(j & 7) }
                j += 1
            }
        }
        return out
    }

    /// Bytes this encoding stores (for reports).
    var byteCount: Int {
        switch self {
        case let .float(v): return v.count * 4
        case let .float16(b): return b.count
        case let .linear(codes, scale, bias): return codes.count + 4 * (scale.count + bias.count)
        case let .lookupTable(_, packed, table): return packed.count + 4 * table.count
        }
    }
}
