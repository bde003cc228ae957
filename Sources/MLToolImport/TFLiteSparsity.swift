import MLToolCore

/// A sparse TFLite constant (schema SparsityParameters): the stored values are its non-zero entries in traversal
/// order, each dimension either dense (every index) or compressed (CSR: per parent position a segment of indices).
/// DENSIFY turns it back into a dense tensor (`densify`), what TFLite's FormatConverter does. Block maps (block-
/// sparse weights) are refused.
struct TFLiteSparsity {
    struct Dimension {
        var dense: Bool
        var denseSize: Int
        var segments: [Int]
        var indices: [Int]
    }

    var traversalOrder: [Int]
    var blockMap: [Int]
    var dimensions: [Dimension]

    /// SparsityParameters: traversal_order 0, block_map 1, dim_metadata 2. DimensionMetadata: format 0 (DENSE 0,
    /// SPARSE_CSR 1), dense_size 1, array_segments_type 2, array_segments 3, array_indices_type 4, array_indices 5;
    /// the arrays are unions of Int32Vector 1, Uint16Vector 2, Uint8Vector 3, each a table with values in slot 0.
    init(_ t: FlatBuffer.Table, _ fb: FlatBuffer) throws {
        traversalOrder = try (fb.int32s(t, 0, "traversal_order") ?? []).map(Int.init)
        blockMap = try (fb.int32s(t, 1, "block_map") ?? []).map(Int.init)
        dimensions = try fb.tables(t, 2, "dim_metadata").map { d in
            let format = try fb.int8(d, 0, "format")
            guard format == 0 || format == 1 else {
                throw fb.fail(d.position, "\(d.what).format", expected: "DENSE (0) or SPARSE_CSR (1)", actual: "\(format)")
            }
            return Dimension(dense: format == 0, denseSize: Int(try fb.int32(d, 1, "dense_size")),
                             segments: try Self.array(fb, d, type: 2, slot: 3, "array_segments"),
                             indices: try Self.array(fb, d, type: 4, slot: 5, "array_indices"))
        }
    }

    /// A SparseIndexVector union's values (empty when absent).
    private static func array(_ fb: FlatBuffer, _ d: FlatBuffer.Table, type: Int, slot: Int, _ what: String) throws -> [Int] {
        let kind = try fb.uint8(d, type, "\(what)_type")
        guard kind != 0, let v = try fb.table(d, slot, what) else { return [] }
        let size = [1: 4, 2: 2, 3: 1][Int(kind)]
        guard let size, let (start, count) = try fb.vector(v, 0, elementSize: size, "\(what).values") else {
            throw fb.fail(d.position, "\(d.what).\(what)_type", expected: "Int32Vector, Uint16Vector or Uint8Vector", actual: "\(kind)")
        }
        return try (0..<count).map { i in
            switch size {
            case 4: return Int(Int32(bitPattern: try fb.u32(start + 4 * i, what)))
            case 2: return Int(try fb.u16(start + 2 * i, what))
            default: return Int(try fb.u8(start + i, what))
            }
        }
    }

    /// The dense tensor of `shape` whose non-zero entries, in traversal order, are `values`; every index, segment
    /// and count is checked (`place` names the tensor in errors).
    func densify(_ values: [Float], shape: [Int], file: String, place: String) throws -> [Float] {
        func bad(_ what: String, _ expected: String, _ actual: String) -> ImportError {
            .invalid(file: file, place: "\(place) sparsity \(what)", expected: expected, actual: actual)
        }
        let rank = shape.count
        guard blockMap.isEmpty else { throw ImportError.refused(file: file, place: "\(place) sparsity block_map",
                                                               reason: "block-sparse tensors are not yet supported") }
        guard traversalOrder.sorted() == Array(0..<rank), dimensions.count == rank else {
            throw bad("traversal_order", "a permutation of the \(rank) dimensions, one metadata each",
                      "\(traversalOrder), \(dimensions.count) metadata")
        }
        let count = try Checked.elementCount(shape, file: file, what: "\(place) shape")
        var strides = [Int](repeating: 1, count: rank)
        for a in stride(from: rank - 2, through: 0, by: -1) { strides[a] = strides[a + 1] &* shape[a + 1] }
        var dense = [Float](repeating: 0, count: count), next = 0
        // Depth-first over the traversal order: `parent` is the position at the level above (a dense level's
        // index grows as parent · size + i, a compressed level's is its segment entry).
        func fill(_ level: Int, _ parent: Int, _ offset: Int) throws {
            if level == rank {
                guard next < values.count else { throw bad("values", "\(values.count) stored values", "more entries") }
                dense[offset] = values[next]
                next += 1
                return
            }
            let axis = traversalOrder[level], d = dimensions[level]
            if d.dense {
                guard d.denseSize == shape[axis] else { throw bad("dense_size of level \(level)", "\(shape[axis])", "\(d.denseSize)") }
                for i in 0..<d.denseSize { try fill(level + 1, parent &* d.denseSize &+ i, offset &+ i &* strides[axis]) }
                return
            }
            guard parent >= 0, parent + 1 < d.segments.count else {
                throw bad("array_segments of level \(level)", "more than \(parent + 1) entries", "\(d.segments.count)")
            }
            let lo = d.segments[parent], hi = d.segments[parent + 1]
            guard lo >= 0, lo <= hi, hi <= d.indices.count else {
                throw bad("array_segments of level \(level)", "ascending positions within \(d.indices.count) indices", "\(lo)…\(hi)")
            }
            for k in lo..<hi {
                let i = d.indices[k]
                guard i >= 0, i < shape[axis] else { throw bad("array_indices of level \(level)", "indices below \(shape[axis])", "\(i)") }
                try fill(level + 1, k, offset &+ i &* strides[axis])
            }
        }
        try fill(0, 0, 0)
        guard next == values.count else { throw bad("values", "\(next) stored values (the entries the metadata lists)", "\(values.count)") }
        return dense
    }
}
