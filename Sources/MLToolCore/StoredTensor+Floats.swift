import Foundation

extension StoredTensor {
    /// The tensor's values as float32, dequantizing int8 / palette / f16 storage. Validates sizes and parameters
    /// first, so a malformed tensor throws instead of trapping.
    public func floats() throws -> [Float] {
        let n = try Checked.elementCount(shape, what: "tensor '\(name)' shape")
        let need = try dtype.traits.byteCount(elements: n)
        guard bytes.count >= need else {
            throw CoreError.truncated(file: "", offset: 0, needed: need, length: bytes.count, what: "tensor '\(name)'")
        }
        let raw = bytes.buffer
        switch dtype {
        case .f32:
            return [Float](unsafeUninitializedCapacity: n) { out, done in
                if n > 0, let base = raw.baseAddress { memcpy(out.baseAddress!, base, n &* 4) }
                done = n
            }
        case .f16:
            return (0..<n).map { Float(Float16(bitPattern: raw.loadUnaligned(fromByteOffset: $0 &* 2, as: UInt16.self))) }
        case .int8:
            let (outer, channels, inner) = try axisSplit()
            guard let scales = quant?.scales, scales.count == channels || (quant?.axis == nil && scales.count == 1) else {
                throw CoreError.invalidValue(file: "", offset: nil, what: "tensor '\(name)' scales",
                                             expected: "\(channels) values", actual: "\(quant?.scales?.count ?? 0)")
            }
            let zps = quant?.zeroPoints ?? [Int](repeating: 0, count: scales.count)
            guard zps.count == scales.count else {
                throw CoreError.invalidValue(file: "", offset: nil, what: "tensor '\(name)' zero points",
                                             expected: "\(scales.count) values", actual: "\(zps.count)")
            }
            var out = [Float](repeating: 0, count: n)
            var i = 0
            for _ in 0..<outer {
                for c in 0..<channels {
                    let s = scales[c], z = Float(zps[c])
                    for _ in 0..<inner {
                        out[i] = s * (Float(Int8(bitPattern: raw[i])) - z)
                        i &+= 1
                    }
                }
            }
            return out
        case .palette1, .palette2, .palette4, .palette6, .palette8:
            let bits = dtype.traits.bits
            let (outer, channels, inner) = try axisSplit()
            let groupSize = quant?.axis == nil ? max(channels, 1) : (quant?.groupSize ?? 1)
            guard groupSize >= 1 else {
                throw CoreError.invalidValue(file: "", offset: nil, what: "tensor '\(name)' groupSize",
                                             expected: "≥ 1", actual: "\(groupSize)")
            }
            let groups = (channels + groupSize - 1) / groupSize
            let entries = 1 << bits
            guard let lut = quant?.lut, lut.count == max(groups, 1) * entries else {
                throw CoreError.invalidValue(file: "", offset: nil, what: "tensor '\(name)' look-up table",
                                             expected: "\(max(groups, 1) * entries) values", actual: "\(quant?.lut?.count ?? 0)")
            }
            let scales = quant?.scales
            if let s = scales, s.count != channels {
                throw CoreError.invalidValue(file: "", offset: nil, what: "tensor '\(name)' scales",
                                             expected: "\(channels) values", actual: "\(s.count)")
            }
            var out = [Float](repeating: 0, count: n)
            var i = 0
            for _ in 0..<outer {
                for c in 0..<channels {
                    let base = (c / groupSize) &* entries
                    let scale = scales?[c] ?? 1
                    for _ in 0..<inner {
                        out[i] = scale * lut[base &+ PackedBits.get(raw, index: i, bits: bits)]
                        i &+= 1
                    }
                }
            }
            return out
        case .u8:
            return raw.prefix(n).map { Float($0) }
        case .i32:
            return (0..<n).map { Float(Int32(littleEndian: raw.loadUnaligned(fromByteOffset: $0 &* 4, as: Int32.self))) }
        case .i64:
            return (0..<n).map { Float(Int64(littleEndian: raw.loadUnaligned(fromByteOffset: $0 &* 8, as: Int64.self))) }
        }
    }

    /// The tensor as a float32 `Tensor`.
    public func tensor() throws -> Tensor { Tensor(shape: shape, data: try floats()) }

    /// Splits the shape around the quantization axis: (product before, size of axis, product after); (1, 1, all)
    /// without an axis. Throws for an axis outside the shape.
    public func axisSplit() throws -> (Int, Int, Int) {
        guard let axis = quant?.axis else { return (1, 1, elementCount) }
        guard axis >= 0, axis < shape.count else {
            throw CoreError.invalidValue(file: "", offset: nil, what: "tensor '\(name)' quantization axis",
                                         expected: "0..<\(shape.count)", actual: "\(axis)")
        }
        let outer = shape[..<axis].reduce(1, *), inner = shape[(axis + 1)...].reduce(1, *)
        return (outer, shape[axis], inner)
    }
}

/// A palette with an int8 table (every `lut` value an integer in −127…127, docs/FORMAT.md §5) quantized along its
/// last axis, checked once for every reader (the engine, the exporters): element i is the int8 value
/// lut[(c / groupSize) · 2^bits + its index] with scale scales[c] (1 without scales), c = i mod `columns`.
public struct Int8Table: Sendable {
    public let bits: Int
    /// Elements, and the last dimension (the channels the scales and table groups run along).
    public let count: Int, columns: Int
    public let groupSize: Int
    /// groups × 2^bits entries, group g's at g · 2^bits.
    public let lut: [Int8]
    public let scales: [Float]

    /// The table group of column c.
    @inlinable public func group(ofColumn c: Int) -> Int { c / groupSize }

    /// Element i's int8 value, its index read from `raw` (the tensor's bytes, at least `count` indices long: checked
    /// by `StoredTensor.int8Table()`).
    @inlinable public func value(_ raw: UnsafeRawBufferPointer, _ i: Int) -> Int8 {
        lut[group(ofColumn: i % columns) << bits | PackedBits.get(raw, index: i, bits: bits)]
    }
}

extension StoredTensor {
    /// This tensor as an `Int8Table`: nil for any other tensor (not a 1/2/4/6/8-bit palette along its last axis,
    /// zero points, a table entry off the integers or outside −127…127, a table or scale count that does not match,
    /// a non-finite scale), or short bytes.
    public func int8Table() -> Int8Table? {
        let bits = dtype.traits.bits
        guard dtype.traits.isPalette, [1, 2, 4, 6, 8].contains(bits), let n = shape.last, n > 0,
              let count = try? Checked.elementCount(shape, what: name), count > 0,
              let need = try? dtype.traits.byteCount(elements: count), bytes.count >= need,
              let q = quant, let lut = q.lut, q.zeroPoints == nil, q.axis == shape.count - 1,
              lut.allSatisfy({ $0 >= -127 && $0 <= 127 && $0 == $0.rounded() }) else { return nil }
        let g = q.groupSize ?? 1
        guard g >= 1, lut.count == ((n &+ g &- 1) / g) << bits else { return nil }
        let scales = q.scales ?? [Float](repeating: 1, count: n)
        guard scales.count == n, scales.allSatisfy({ $0.isFinite }) else { return nil }
        return Int8Table(bits: bits, count: count, columns: n, groupSize: g, lut: lut.map { Int8($0) }, scales: scales)
    }

    /// An `Int8Table` palette as the int8 values and per-column scales it equals. nil for any other tensor.
    public func int8TableValues() -> (values: [Int8], scales: [Float])? {
        guard let table = int8Table() else { return nil }
        let raw = bytes.buffer
        return ((0..<table.count).map { table.value(raw, $0) }, table.scales)
    }

    /// `int8TableValues()` as the linear int8 tensor it equals (what exporters write for such a palette).
    public func int8TableAsLinear() -> StoredTensor? {
        guard let (values, scales) = int8TableValues() else { return nil }
        return StoredTensor(name: name, dtype: .int8, shape: shape,
                            quant: QuantParams(axis: shape.count - 1, scales: scales,
                                               scalesType: quant?.scales == nil ? nil : quant?.scalesType),
                            bytes: TensorBytes(copying: values.map { UInt8(bitPattern: $0) }))
    }
}

/// Packed k-bit indices: element i occupies stream bits [i·k, i·k + k), and stream bit j is bit (j mod 8) of byte
/// j / 8 (LSB first). The same layout for k = 1, 2, 4, 6, 8.
public enum PackedBits {
    @inlinable
    public static func get(_ raw: UnsafeRawBufferPointer, index i: Int, bits k: Int) -> Int {
        let bit = i &* k
        let byte = bit >> 3, shift = bit & 7
        var v = Int(raw[byte]) >> shift
        if shift &+ k > 8 { v |= Int(raw[byte &+ 1]) << (8 &- shift) }
        return v & ((1 << k) &- 1)
    }

    /// Packs `indices` (each < 2^k) into the layout above.
    public static func pack(_ indices: [Int], bits k: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: (indices.count &* k &+ 7) / 8)
        for (i, v) in indices.enumerated() {
            let bit = i &* k, byte = bit >> 3, shift = bit & 7
            out[byte] |= UInt8(truncatingIfNeeded: v << shift)
            if shift &+ k > 8 { out[byte &+ 1] |= UInt8(truncatingIfNeeded: v >> (8 &- shift)) }
        }
        return out
    }
}
