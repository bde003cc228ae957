import CCoreMLProto
import MLToolCore

/// Flexible input sizes (Core ML's `shapeRange` / `enumeratedShapes` on a multi-array, `imageSizeRange` /
/// `enumeratedSizes` on an image): the dimensions the file lets vary become free (−1) in the graph, named, with
/// their bounds or the enumerated shapes recorded on the graph input; the file's default shape stays the one used
/// where a fixed size is needed (an image's preprocessing size).
struct CoreMLFlexibleShape {
    /// The file's default shape (ONNX order).
    var defaults: [Int]
    /// Per dimension: [min, max] (max −1 unbounded), when the file gives ranges.
    var ranges: [[Int]]?
    /// The enumerated shapes, −1 where they all agree.
    var enumerated: [[Int]]?

    var flexible: [Bool] {
        defaults.indices.map { k in
            if let r = ranges?[k] { return r[0] != r[1] }
            if let e = enumerated { return Set(e.map { $0[k] }) != [-1] }
            return false
        }
    }

    /// The graph's shape: flexible dimensions free.
    var graphShape: [Int] { zip(defaults, flexible).map { $1 ? -1 : $0 } }

    /// The graph input: IR-order shape, names of the free dimensions, their bounds.
    func input(_ name: String, names: (Int) -> String) -> GraphInput {
        var input = GraphInput(name: name, shape: Layout.irShape(graphShape))
        guard flexible.contains(true) else { return input }
        input.dimensionNames = Layout.irOrder(flexible.enumerated().map { $1 ? names($0) : "" })
        // A fixed dimension's range says nothing the shape does not (and the batch may be freed later).
        input.dimensionRanges = ranges.map { r in Layout.irOrder(zip(r, flexible).map { $1 ? $0 : [0, -1] }) }
        input.enumeratedShapes = enumerated.map { $0.map { Layout.irOrder($0) } }
        return input
    }

    static let maxSize = 1 << 24

    /// A multi-array's flexibility; `shape` is its default shape.
    static func array(_ a: CoreML__Specification__ArrayFeatureType, shape: [Int], place: String, file: String) throws -> CoreMLFlexibleShape {
        var f = CoreMLFlexibleShape(defaults: shape)
        if let r = a.shaperange?.pointee, r.n_sizeranges > 0 {
            guard r.n_sizeranges == shape.count else {
                throw ImportError.invalid(file: file, place: "\(place) shapeRange", expected: "\(shape.count) ranges", actual: "\(r.n_sizeranges)")
            }
            f.ranges = try (0..<r.n_sizeranges).map { try range(r.sizeranges[$0]?.pointee, place: "\(place) shapeRange \($0)", file: file) }
        }
        if let e = a.enumeratedshapes?.pointee, e.n_shapes > 0 {
            let shapes = (0..<e.n_shapes).map { i in
                e.shapes[i].map { s in (0..<s.pointee.n_shape).map { Int(clamping: s.pointee.shape[$0]) } } ?? []
            }
            try f.enumerate(shapes, place: "\(place) enumeratedShapes", file: file)
        }
        return f
    }

    /// An image's flexibility (N, C, H, W); `shape` is its default shape.
    static func image(_ t: CoreML__Specification__ImageFeatureType, shape: [Int], place: String, file: String) throws -> CoreMLFlexibleShape {
        var f = CoreMLFlexibleShape(defaults: shape)
        if let r = t.imagesizerange?.pointee {
            let h = try range(r.heightrange?.pointee, place: "\(place) heightRange", file: file)
            let w = try range(r.widthrange?.pointee, place: "\(place) widthRange", file: file)
            f.ranges = [[shape[0], shape[0]], [shape[1], shape[1]], h, w]
        }
        if let e = t.enumeratedsizes?.pointee, e.n_sizes > 0 {
            let shapes = (0..<e.n_sizes).map { i in
                e.sizes[i].map { [shape[0], shape[1], Int(clamping: $0.pointee.height), Int(clamping: $0.pointee.width)] } ?? []
            }
            try f.enumerate(shapes, place: "\(place) enumeratedSizes", file: file)
        }
        return f
    }

    private static func range(_ r: CoreML__Specification__SizeRange?, place: String, file: String) throws -> [Int] {
        guard let r else { throw ImportError.invalid(file: file, place: place, expected: "a size range", actual: "none") }
        let low = Int(clamping: r.lowerbound), high = Int(clamping: r.upperbound)
        guard low >= 1, low <= maxSize, high == -1 || (high >= low && high <= maxSize) else {
            throw ImportError.invalid(file: file, place: place, expected: "1 ≤ lower ≤ upper ≤ \(maxSize) (upper −1: unbounded)", actual: "\(low)…\(high)")
        }
        return [low, high]
    }

    private mutating func enumerate(_ shapes: [[Int]], place: String, file: String) throws {
        for s in shapes {
            guard s.count == defaults.count, s.allSatisfy({ $0 >= 1 && $0 <= Self.maxSize }) else {
                throw ImportError.invalid(file: file, place: place, expected: "shapes of rank \(defaults.count) with sizes 1…\(Self.maxSize)", actual: "\(s)")
            }
        }
        let varying = defaults.indices.map { k in Set(shapes.map { $0[k] }).count > 1 || shapes.contains { $0[k] != defaults[k] } }
        // Sorted and distinct: the file's order says nothing.
        enumerated = Array(Set(shapes.map { s in s.indices.map { varying[$0] ? s[$0] : -1 } })).sorted { $0.lexicographicallyPrecedes($1) }
    }
}
