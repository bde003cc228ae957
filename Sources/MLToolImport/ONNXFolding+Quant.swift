import MLToolCore

/// DequantizeLinear and QuantizeLinear on constants (quantized weights, as `mltool export` and onnxruntime's
/// quantizer write them), folded at import. A dequantized int8/uint8 constant remembers its scales and zero points,
/// so that it is stored as int8 again (`ONNXImporter.storedTensor`) and the imported model stays small.
extension ONNXGraphBuilder {
    /// The axis and per-slice scale / zero point of a (De)QuantizeLinear: one pair for the whole tensor, or one per
    /// index along `axis` (opset 13+).
    private func quantParams(_ node: ONNXFile.Node, x: ONNXConstant, scale: ONNXConstant, zeroPoint: ONNXConstant?)
        throws -> (axis: Int?, scales: [Double], zeroPoints: [Double]) {
        if int(node, "block_size", 0) != 0 {
            throw ImportError.invalid(file: file, place: "\(place(node)) block_size", expected: "0 (per-tensor or per-axis)",
                                      actual: "\(int(node, "block_size", 0))")
        }
        var axis: Int?
        if scale.values.count != 1 {
            guard opset >= 13 || node.domain == Self.expansionDomain, scale.rank == 1 else {
                throw ImportError.invalid(file: file, place: "\(place(node)) scale", expected: "a scalar (per-tensor) or, from opset 13, a 1-D per-axis scale",
                                          actual: "\(scale.shape)")
            }
            let a = try normalize(int(node, "axis", 1), rank: x.rank, node)
            guard scale.values.count == x.shape[a] else {
                throw ImportError.invalid(file: file, place: "\(place(node)) scale", expected: "\(x.shape[a]) values (axis \(a) of \(x.shape))",
                                          actual: "\(scale.shape)")
            }
            axis = a
        }
        let zps = zeroPoint?.values ?? [Double](repeating: 0, count: scale.values.count)
        guard zps.count == scale.values.count else {
            throw ImportError.invalid(file: file, place: "\(place(node)) zero_point", expected: "\(scale.values.count) values (like the scale)",
                                      actual: "\(zeroPoint?.shape ?? [])")
        }
        return (axis, scale.values, zps)
    }

    /// Index along `axis` of every element of a tensor of `shape` (all 0 when axis is nil).
    private static func channelOf(_ shape: [Int], axis: Int?) -> (Int) -> Int {
        guard let axis else { return { _ in 0 } }
        let inner = shape[(axis + 1)...].reduce(1, *), n = shape[axis]
        return { ($0 / inner) % n }
    }

    /// x: integer codes → scale · (x − zero_point), as float. int8/uint8 codes keep their parameters (`quant`).
    func dequantize(_ node: ONNXFile.Node) throws -> ONNXConstant {
        let x = try constant(node, 0, what: "x"), scale = try constant(node, 1, what: "x_scale")
        let zp = try optionalConstant(node, 2, what: "x_zero_point")
        guard x.isInteger else {
            throw ImportError.invalid(file: file, place: "\(place(node)) x", expected: "integer codes", actual: "floating point")
        }
        let p = try quantParams(node, x: x, scale: scale, zeroPoint: zp)
        let channel = Self.channelOf(x.shape, axis: p.axis)
        let scales = p.scales.map { Double(Float($0)) }
        var out = ONNXConstant(shape: x.shape, values: x.values.indices.map { i in
            let c = channel(i)
            return scales[c] * (x.values[i] - p.zeroPoints[c])
        })
        // uint8 codes q with zero point z hold the same values as int8 codes q − 128 with zero point z − 128.
        let shift: Double? = x.dataType == 3 ? 0 : (x.dataType == 2 ? 128 : nil)
        if let shift, p.zeroPoints.allSatisfy({ $0 - shift >= -128 && $0 - shift <= 127 }) {
            out.quant = .init(axis: p.axis, scales: scales.map { Float($0) }, zeroPoints: p.zeroPoints.map { Int($0 - shift) })
        }
        return out
    }

    /// x: float → saturate(round_half_even(x / scale) + zero_point) in the zero point's type (uint8 by default).
    func quantize(_ node: ONNXFile.Node) throws -> ONNXConstant {
        let x = try constant(node, 0, what: "x"), scale = try constant(node, 1, what: "y_scale")
        let zp = try optionalConstant(node, 2, what: "y_zero_point")
        let ranges: [Int32: ClosedRange<Double>] = [2: 0...255, 3: -128...127, 4: 0...65535, 5: -32768...32767]
        let type = zp?.dataType ?? 2
        guard let range = ranges[type == 0 ? 2 : type] else {
            throw ImportError.invalid(file: file, place: "\(place(node)) y_zero_point", expected: "uint8, int8, uint16 or int16",
                                      actual: "data_type \(type)")
        }
        let p = try quantParams(node, x: x, scale: scale, zeroPoint: zp)
        let channel = Self.channelOf(x.shape, axis: p.axis)
        var out = ONNXConstant(shape: x.shape, values: x.values.indices.map { i in
            let c = channel(i)
            let q = (Double(Float(x.values[i]) / Float(p.scales[c]))).rounded(.toNearestOrEven) + p.zeroPoints[c]
            return min(max(q, range.lowerBound), range.upperBound)
        }, isInteger: true)
        out.dataType = type == 0 ? 2 : type
        return out
    }
}

extension ONNXImporter {
    /// A weight as the model stores it: int8 with its scales and zero points when it came from a DequantizeLinear
    /// and every value is exactly one of its codes; float32 otherwise.
    static func storedTensor(_ name: String, shape: [Int], values: [Float], quant: ONNXConstant.Quant?) -> StoredTensor {
        let float = StoredTensor(name: name, dtype: .f32, shape: shape, bytes: TensorBytes(floats: values))
        if let q = quant, q.lut != nil { return paletteTensor(name, shape: shape, values: values, quant: q) ?? float }
        guard let q = quant, q.scales.count == q.zeroPoints.count else { return float }
        let channels = q.axis.map { shape[$0] } ?? 1
        let inner = q.axis.map { shape[($0 + 1)...].reduce(1, *) } ?? 1
        guard q.scales.count == channels, channels > 0 else { return float }
        var codes = [UInt8](repeating: 0, count: values.count)
        for (i, v) in values.enumerated() {
            let c = (i / inner) % channels
            let s = q.scales[c], z = q.zeroPoints[c]
            guard s != 0, s.isFinite else { return float }
            let r = (Double(v) / Double(s)).rounded()
            guard abs(r) <= 256 else { return float }
            let code = Int(r) + z
            guard (-128...127).contains(code), s * (Float(code) - Float(z)) == v else { return float }
            codes[i] = UInt8(bitPattern: Int8(code))
        }
        return StoredTensor(name: name, dtype: .int8, shape: shape,
                            quant: QuantParams(axis: q.axis, scales: q.scales, zeroPoints: q.zeroPoints),
                            bytes: TensorBytes(copying: codes))
    }
}

extension ONNXImporter {
    /// Stored palette dtypes by the index width they hold (a 3-, 5- or 7-bit table is stored in the next wider one).
    static let paletteTypes: [(bits: Int, dtype: DType)] = [(1, .palette1), (2, .palette2), (4, .palette4), (6, .palette6), (8, .palette8)]

    /// A weight whose values all come from its group's look-up table, stored as packed indices into that table
    /// (padded to the stored width); nil when a value is not in its table or the parameters do not fit the shape.
    static func paletteTensor(_ name: String, shape: [Int], values: [Float], quant q: ONNXConstant.Quant) -> StoredTensor? {
        guard let lut = q.lut, let stored = paletteTypes.first(where: { $0.bits >= q.lutBits }), q.lutBits >= 1, q.groupSize >= 1
        else { return nil }
        let entries = 1 << q.lutBits, width = 1 << stored.bits
        let channels = q.axis.map { $0 < shape.count ? shape[$0] : 0 } ?? 1
        let inner = q.axis.map { $0 < shape.count ? shape[($0 + 1)...].reduce(1, *) : 0 } ?? 1
        let groups = q.axis == nil ? 1 : (channels + q.groupSize - 1) / q.groupSize
        guard channels > 0, inner > 0, lut.count == groups * entries else { return nil }
        // Each group's table, padded with its last entry to the stored width; value → first index holding it.
        var table: [Float] = []
        var index: [[UInt32: Int]] = []
        for g in 0..<groups {
            let part = Array(lut[(g * entries)..<((g + 1) * entries)])
            table += part + [Float](repeating: part[entries - 1], count: width - entries)
            var map: [UInt32: Int] = [:]
            for (i, v) in part.enumerated() where map[v.bitPattern] == nil { map[v.bitPattern] = i }
            index.append(map)
        }
        var codes = [Int](repeating: 0, count: values.count)
        for (i, v) in values.enumerated() {
            let g = q.axis == nil ? 0 : ((i / inner) % channels) / q.groupSize
            guard let code = index[g][v.bitPattern] else { return nil }
            codes[i] = code
        }
        return StoredTensor(name: name, dtype: stored.dtype, shape: shape,
                            quant: QuantParams(axis: q.axis, groupSize: q.axis == nil ? nil : q.groupSize, lut: table),
                            bytes: TensorBytes(copying: PackedBits.pack(codes, bits: stored.bits)))
    }
}
