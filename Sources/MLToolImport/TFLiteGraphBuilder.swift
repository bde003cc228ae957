import MLToolCore

/// Accumulates the IR graph of subgraph 0 of a TFLite file. TFLite is NHWC like the IR, so activations keep their
/// layout; weights are rearranged into the IR's layouts (`TFLiteOps`). Tensors are known by their index in the
/// subgraph; each has the IR name `name(_:)` (its TFLite name, unless empty or taken).
struct TFLiteGraphBuilder {
    let tfl: TFLiteFile
    let graph: TFLiteFile.SubGraph
    private(set) var nodes: [Node] = []
    private(set) var tensors: [StoredTensor] = []
    private(set) var inputs: [GraphInput] = []
    /// The float32 values of every constant tensor: those with data in a buffer, and those folded at import
    /// (DEQUANTIZE of a constant).
    private var constants: [Int: [Float]] = [:]
    /// The stored non-zero entries of each sparse constant (read by DENSIFY).
    private var sparseValues: [Int: [Float]] = [:]
    /// Constants already stored as model tensors.
    private var stored: Set<Int> = []
    private(set) var names: [String] = []
    /// Whether `layerWeight` stores int8 weights dequantized to float32 (a layer whose input is already on its
    /// quantization grid, `TFLiteGraphBuilder.rowQuantized`).
    var dequantizesWeights = false

    var file: String { tfl.file }

    init(_ tfl: TFLiteFile) throws {
        self.tfl = tfl
        graph = tfl.subgraphs[0]
        var taken = Set<String>()
        for (i, t) in graph.tensors.enumerated() {
            let name = t.name.isEmpty || taken.contains(t.name) ? "tensor_\(i)" : t.name
            taken.insert(name)
            names.append(name)
        }
        for (i, t) in graph.tensors.enumerated() where t.buffer > 0 {
            guard t.buffer < tfl.buffers.count else {
                throw ImportError.invalid(file: file, place: "tensor \(i) '\(t.name)' buffer", expected: "an index below \(tfl.buffers.count)",
                                          actual: "\(t.buffer)")
            }
            let range = tfl.buffers[t.buffer]
            guard !range.isEmpty else { continue }
            // A sparse constant's buffer holds its non-zero entries only; DENSIFY makes the tensor.
            if t.isSparse { sparseValues[i] = try values(i, range, stored: true) } else { constants[i] = try values(i, range) }
        }
    }

    // MARK: - Tensors

    func tensor(_ i: Int, _ place: String) throws -> TFLiteFile.Tensor {
        guard i >= 0, i < graph.tensors.count else {
            throw ImportError.invalid(file: file, place: place, expected: "a tensor index below \(graph.tensors.count)", actual: "\(i)")
        }
        return graph.tensors[i]
    }

    /// The IR name of tensor `i` (checked).
    func name(_ i: Int) -> String { names[i] }

    /// The static shape of tensor `i` as the file gives it.
    func shape(_ i: Int) -> [Int] { graph.tensors[i].shape }

    func isConstant(_ i: Int) -> Bool { constants[i] != nil }

    /// The values of constant tensor `i`, or an error naming the op that needs it constant.
    func constant(_ i: Int, _ place: String) throws -> [Float] {
        guard let v = constants[i] else {
            throw ImportError.unsupported(file: file, ops: [.init(op: "\(place) computed at run time (a constant is needed)",
                                                                  count: 1, firstNodes: [i >= 0 && i < names.count ? names[i] : "\(i)"])])
        }
        return v
    }

    /// A constant holding integers (shapes, axes, paddings), each within int32 (so sums of two never overflow).
    func ints(_ i: Int, _ place: String) throws -> [Int] {
        try constant(i, place).map { v in
            guard let n = Int(exactly: v), abs(n) <= Int(Int32.max) else {
                throw ImportError.invalid(file: file, place: "\(place) '\(name(i))'", expected: "int32 integers", actual: "\(v)")
            }
            return n
        }
    }

    /// Records folded values for tensor `i`.
    mutating func setConstant(_ i: Int, _ values: [Float]) { constants[i] = values }

    /// DENSIFY: the dense values of sparse constant input 0 (`TFLiteSparsity.densify`), folded into its output.
    mutating func densify(_ c: TFLiteCall) throws {
        let x = try c.input(0, self)
        let t = graph.tensors[x]
        guard let sparsity = t.sparsity, let values = sparseValues[x] else {
            throw ImportError.invalid(file: file, place: c.place("input '\(name(x))'"), expected: "a sparse constant",
                                      actual: t.isSparse ? "a sparse tensor without a buffer" : "a dense tensor")
        }
        let o = try out(c)
        guard shape(o) == t.shape else {
            throw ImportError.invalid(file: file, place: c.place("output '\(name(o))'"), expected: "shape \(t.shape) (the input's)",
                                      actual: "\(shape(o))")
        }
        setConstant(o, try sparsity.densify(values, shape: t.shape, file: file, place: "tensor \(x) '\(t.name)'"))
    }

    /// The IR name to read tensor `i` from: a constant becomes a model tensor the first time it is read.
    mutating func input(_ i: Int) throws -> String {
        if let v = constants[i], !stored.contains(i) {
            tensors.append(StoredTensor(name: names[i], tensor: Tensor(shape: shape(i), data: v)))
            stored.insert(i)
        }
        return names[i]
    }

    /// Adds a model tensor of the given values under a fresh name derived from `base`.
    mutating func weight(_ base: String, shape: [Int], data: [Float]) -> String {
        store(base) { StoredTensor(name: $0, tensor: Tensor(shape: shape, data: data)) }
    }

    /// Adds the model tensor `make` gives for a fresh name derived from `base`; that name.
    mutating func store(_ base: String, _ make: (String) -> StoredTensor) -> String {
        var name = base, n = 1
        while names.contains(name) || tensors.contains(where: { $0.name == name }) { n += 1; name = "\(base)_\(n)" }
        tensors.append(make(name))
        return name
    }

    /// Makes readers of tensor `i` read `name` from now on.
    mutating func rename(_ i: Int, to name: String) { names[i] = name }

    /// A graph input: float32, or int8/uint8 codes, which the IR input takes as real values and quantizes to the
    /// file's scale and zero point (its readers see `name(i)`, the quantized values).
    mutating func addInput(_ i: Int) throws {
        let t = try tensor(i, "subgraph input")
        let range = Self.codeRange(t.type)
        guard t.type == 0 || range != nil else {
            throw ImportError.unsupported(file: file, ops: [.init(op: "graph input of type \(TFLiteFile.typeName(t.type)) (float32, int8 or uint8 only)",
                                                                  count: 1, firstNodes: [names[i]])])
        }
        inputs.append(GraphInput(name: names[i], shape: t.shapeSignature.flatMap { $0.count == t.shape.count ? $0 : nil } ?? t.shape))
        guard let range, let q = t.quantization, q.scales.count == 1 else {
            guard range == nil else {
                throw ImportError.invalid(file: file, place: "subgraph input \(i) '\(t.name)' quantization", expected: "one scale and zero point",
                                          actual: t.quantization.map { "\($0.scales.count) scales" } ?? "none")
            }
            return
        }
        let quantized = fresh(names[i], "quantized")
        var a = Attributes(min: Float(range.lowerBound), max: Float(range.upperBound), mode: "values")
        a.quantScales = [q.scales[0]]
        a.quantZeroPoints = [q.zeroPoints.first.map(Int.init) ?? 0]
        emit(names[i] + ".quantize", .quantize, [names[i]], output: quantized, a)
        names[i] = quantized
    }

    mutating func emit(_ name: String, _ op: Op, _ inputs: [String], output: String, _ attributes: Attributes = Attributes()) {
        nodes.append(Node(name: name, op: op, inputs: inputs, outputs: [output], attributes: attributes))
    }

    /// A fresh name for an intermediate tensor of the node making `output`.
    func fresh(_ output: String, _ suffix: String) -> String {
        var name = "\(output).\(suffix)", n = 1
        while names.contains(name) || nodes.contains(where: { $0.outputs.contains(name) }) { n += 1; name = "\(output).\(suffix)\(n)" }
        return name
    }

    // MARK: - Buffers

    /// The float32 values of constant tensor `i` stored in `range`: float32, float16, int32, int64, int8 and uint8
    /// (the integer codes; DEQUANTIZE applies their scales).
    /// With `stored`, as many values as the buffer holds (a sparse tensor's non-zero entries).
    private func values(_ i: Int, _ range: Range<Int>, stored: Bool = false) throws -> [Float] {
        let t = graph.tensors[i]
        var count = try stored ? 0 : Checked.elementCount(t.shape, file: file, what: "tensor '\(t.name)' shape")
        let size: Int
        switch t.type {
        case 0, 2: size = 4
        case 1: size = 2
        case 4: size = 8
        case 3, 9, 6: size = 1
        default:
            throw ImportError.unsupported(file: file, ops: [.init(op: "constant of type \(TFLiteFile.typeName(t.type))",
                                                                  count: 1, firstNodes: [t.name])])
        }
        if stored { count = range.count / size }
        let bytes = try Checked.mul(count, size, file: file, what: "tensor '\(t.name)' size")
        guard bytes == range.count else {
            throw ImportError.invalid(file: file, place: "byte \(range.lowerBound): buffer \(t.buffer) of tensor \(i) '\(t.name)'",
                                      expected: "\(bytes) bytes (\(count) × \(TFLiteFile.typeName(t.type)))", actual: "\(range.count)")
        }
        let b = tfl.flat.bytes, s = range.lowerBound
        func u32(_ k: Int) -> UInt32 {
            UInt32(b[s + k]) | UInt32(b[s + k + 1]) << 8 | UInt32(b[s + k + 2]) << 16 | UInt32(b[s + k + 3]) << 24
        }
        switch t.type {
        case 0: return (0..<count).map { Float(bitPattern: u32(4 * $0)) }
        case 2: return (0..<count).map { Float(Int32(bitPattern: u32(4 * $0))) }
        case 1: return (0..<count).map { Float(Float16(bitPattern: UInt16(b[s + 2 * $0]) | UInt16(b[s + 2 * $0 + 1]) << 8)) }
        case 4: return (0..<count).map { Float(Int64(bitPattern: UInt64(u32(8 * $0)) | UInt64(u32(8 * $0 + 4)) << 32)) }
        case 9: return (0..<count).map { Float(Int8(bitPattern: b[s + $0])) }
        default: return (0..<count).map { Float(b[s + $0]) }
        }
    }
}
