import CCoreMLProto
import CProtobufC
import Foundation
import MLToolCore

/// A MIL constant: its MIL data type, shape and values (numbers as Double, or strings).
struct MILTensor {
    var dataType: Int32
    var shape: [Int]
    var values: [Double]
    var strings: [String] = []

    var isFloat: Bool { [10, 11, 12, 13].contains(dataType) }
    var ints: [Int] { values.map { $0.isFinite && abs($0) < 9e18 ? Int($0) : 0 } }
    var constant: ONNXConstant { ONNXConstant(shape: shape, values: values, isInteger: !isFloat) }
}

/// Reads the main function of an ML Program (`Model.mlProgram`) into `CoreMLGraph`: constants (immediate or
/// blob-file values, and the compressed `constexpr_*` forms) and the ops of `CoreMLProgramOps`.
struct CoreMLProgramReader {
    typealias Operation = CoreML__Specification__MILOperation
    var g: CoreMLGraph
    let package: CoreMLPackage?
    let file: String
    var consts: [String: MILTensor] = [:]
    /// Names that stand for another (the image input after its lifted scale and bias).
    var alias: [String: String] = [:]
    var blobs: [String: CoreMLBlobFile] = [:]
    /// From a `classify` op: the class names and the tensor of scores.
    var labels: [String] = []
    var probabilities: String?
    /// Image scale and bias lifted out of the program into the model's preprocessing.
    var imageScale: Float?
    var imageBias: [Float]?

    // MARK: values

    func name(_ s: String) -> String { alias[s] ?? s }

    /// The bindings of input `key` of `op` (nil when the op does not have it).
    func bindings(_ op: Operation, _ key: String) -> [CoreML__Specification__MILArgument__Binding]? {
        for i in 0..<op.n_inputs {
            guard let e = op.inputs[i]?.pointee, cString(e.key) == key, let a = e.value?.pointee else { continue }
            return (0..<a.n_arguments).compactMap { a.arguments[$0]?.pointee }
        }
        return nil
    }

    /// The variable named by input `key` (nil when absent), aliases resolved; immediate values become constants.
    mutating func variable(_ op: Operation, _ key: String) throws -> String? {
        guard let b = bindings(op, key)?.first else {
            // The iOS 16 constexpr ops take their operands as attributes.
            guard let v = CoreMLProgramOps.attribute(op, key) else { return nil }
            let t = try tensor(v, place: "\(g.label) attribute '\(key)'")
            let n = g.fresh("\(key).attribute")
            consts[n] = t
            if t.strings.isEmpty { g.b.constants[n] = t.constant }
            return n
        }
        return try bound(b, key)
    }

    /// All variables of a variadic input (concat's `values`).
    mutating func variables(_ op: Operation, _ key: String) throws -> [String] {
        try (bindings(op, key) ?? []).map { try bound($0, key) }
    }

    private mutating func bound(_ b: CoreML__Specification__MILArgument__Binding, _ key: String) throws -> String {
        if let v = b.value?.pointee {
            let t = try tensor(v, place: "\(g.label) input '\(key)'")
            let n = g.fresh("\(key).immediate")
            consts[n] = t
            if t.strings.isEmpty { g.b.constants[n] = t.constant }
            return n
        }
        return name(cString(b.name))
    }

    /// A constant input (immediate or a `const`'s output), or nil when absent.
    mutating func constInput(_ op: Operation, _ key: String) throws -> MILTensor? {
        guard let v = try variable(op, key) else { return nil }
        guard let t = consts[v] else { throw g.invalid("input '\(key)'", expected: "a constant", actual: "computed tensor '\(v)'") }
        return t
    }

    mutating func ints(_ op: Operation, _ key: String, _ fallback: [Int]) throws -> [Int] { try constInput(op, key)?.ints ?? fallback }
    mutating func int(_ op: Operation, _ key: String, _ fallback: Int) throws -> Int { try constInput(op, key)?.ints.first ?? fallback }
    mutating func float(_ op: Operation, _ key: String, _ fallback: Float) throws -> Float {
        try constInput(op, key)?.values.first.map { Float($0) } ?? fallback
    }
    mutating func bool(_ op: Operation, _ key: String, _ fallback: Bool) throws -> Bool { try constInput(op, key)?.values.first.map { $0 != 0 } ?? fallback }
    mutating func string(_ op: Operation, _ key: String, _ fallback: String) throws -> String { try constInput(op, key)?.strings.first ?? fallback }

    /// The computed (or constant) tensor of a required input.
    mutating func required(_ op: Operation, _ key: String) throws -> String {
        guard let v = try variable(op, key) else { throw g.invalid("", expected: "input '\(key)'", actual: "none") }
        _ = try g.need(v)
        return v
    }

    // MARK: decoding

    static let elementBits: [Int32: Int] = [1: 8, 10: 16, 11: 32, 12: 64, 13: 16, 21: 8, 22: 16, 23: 32, 24: 64, 25: 4, 31: 8, 32: 16,
                                            33: 32, 34: 64, 35: 4, 36: 2, 37: 1, 38: 6, 39: 3]

    /// A tensor's data type and shape; `flexible` lets a dimension be unknown (−1: a function input's RangeDim or
    /// enumerated size).
    func tensorType(_ t: UnsafeMutablePointer<CoreML__Specification__MILValueType>?, place: String, flexible: Bool = false) throws -> (Int32, [Int]) {
        guard let tt = t?.pointee.tensortype?.pointee else {
            throw ImportError.invalid(file: file, place: place, expected: "a tensor type", actual: "a list, tuple, dictionary or state type")
        }
        var dims: [Int] = []
        for i in 0..<tt.n_dimensions {
            if flexible, let d = tt.dimensions[i]?.pointee, d.unknown != nil, d.constant == nil {
                dims.append(-1)
                continue
            }
            guard let d = tt.dimensions[i]?.pointee, let c = d.constant?.pointee, c.size <= UInt64(Int32.max) else {
                throw ImportError.invalid(file: file, place: place, expected: "fixed dimensions", actual: "a flexible dimension (axis \(i))")
            }
            dims.append(Int(c.size))
        }
        return (tt.datatype, dims)
    }

    /// A MIL value: an immediate tensor or list of scalars, or a blob in a weight file.
    mutating func tensor(_ v: CoreML__Specification__MILValue, place: String) throws -> MILTensor {
        if let list = v.immediatevalue?.pointee.list?.pointee {
            var out = MILTensor(dataType: 0, shape: [list.n_values], values: [])
            for i in 0..<list.n_values {
                guard let item = list.values[i]?.pointee else { continue }
                let t = try tensor(item, place: place)
                out.dataType = t.dataType
                out.values += t.values
                out.strings += t.strings
            }
            return out
        }
        let (type, shape) = try tensorType(v.type, place: place)
        let count = try Checked.elementCount(shape, what: "\(file): \(place) shape")
        if let blob = v.blobfilevalue?.pointee {
            let path = cString(blob.filename)
            guard let package else { throw ImportError.refused(file: file, place: place, reason: "a blob file value outside an .mlpackage") }
            if blobs[path] == nil { blobs[path] = try package.blobFile(path, file: file, place: place) }
            guard let weights = blobs[path] else { throw ImportError.unreadable(file: path, reason: "cannot read") }
            let resolved = weights.path
            let (blobType, data) = try weights.blob(at: blob.offset, place: place)
            guard blobType == type || (type == 21 && blobType == 31) || (type == 31 && blobType == 21) else {
                throw ImportError.invalid(file: resolved, place: "\(place): blob at byte \(blob.offset)", expected: "data type \(type)",
                                          actual: "\(blobType)")
            }
            return MILTensor(dataType: type, shape: shape, values: try decode(data, type: type, count: count, place: place, in: resolved))
        }
        guard let t = v.immediatevalue?.pointee.tensor?.pointee else {
            throw ImportError.invalid(file: file, place: place, expected: "an immediate tensor or a blob file value", actual: "neither")
        }
        var values: [Double] = []
        var strings: [String] = []
        if let f = t.floats?.pointee { values = (0..<f.n_values).map { Double(f.values[$0]) } }
        else if let f = t.doubles?.pointee { values = (0..<f.n_values).map { f.values[$0] } }
        else if let f = t.ints?.pointee { values = (0..<f.n_values).map { Double(f.values[$0]) } }
        else if let f = t.longints?.pointee { values = (0..<f.n_values).map { Double(f.values[$0]) } }
        else if let f = t.bools?.pointee { values = (0..<f.n_values).map { f.values[$0] != 0 ? 1 : 0 } }
        else if let f = t.strings?.pointee { strings = (0..<f.n_values).map { cString(f.values[$0]) } }
        else if let f = t.bytes?.pointee {
            let data = f.values.len > 0 && f.values.data != nil ? Data(bytes: f.values.data, count: f.values.len) : Data()
            values = try decode(data, type: type, count: count, place: place, in: file)
        }
        let n = strings.isEmpty ? values.count : strings.count
        if n == 1 && count > 1 { values = [Double](repeating: values.first ?? 0, count: count) }   // a splat
        else if n != count {
            throw ImportError.invalid(file: file, place: place, expected: "\(count) values for shape \(shape)", actual: "\(n)")
        }
        return MILTensor(dataType: type, shape: shape, values: values, strings: strings)
    }

    /// `count` elements of MIL type `type` from little-endian bytes (sub-byte types packed least significant bit first).
    func decode(_ data: Data, type: Int32, count: Int, place: String, in where_: String) throws -> [Double] {
        guard let bits = Self.elementBits[type] else {
            throw ImportError.invalid(file: where_, place: place, expected: "a numeric data type", actual: "\(type)")
        }
        let need = (try Checked.mul(count, bits, what: "\(where_): \(place) bits") + 7) / 8
        guard data.count >= need else {
            throw ImportError.invalid(file: where_, place: place, expected: "\(need) bytes for \(count) values", actual: "\(data.count)")
        }
        return data.withUnsafeBytes { raw -> [Double] in
            func load<T: FixedWidthInteger>(_: T.Type, _ i: Int) -> T { T(littleEndian: raw.loadUnaligned(fromByteOffset: i &* MemoryLayout<T>.size, as: T.self)) }
            return (0..<count).map { i -> Double in
                switch type {
                case 10: return Double(Float(Float16(bitPattern: load(UInt16.self, i))))
                case 11: return Double(Float(bitPattern: load(UInt32.self, i)))
                case 12: return Double(bitPattern: load(UInt64.self, i))
                case 13: return Double(Float(bitPattern: UInt32(load(UInt16.self, i)) << 16))
                case 21: return Double(Int8(bitPattern: raw[i]))
                case 1, 31: return Double(raw[i])
                case 22: return Double(load(Int16.self, i))
                case 32: return Double(load(UInt16.self, i))
                case 23: return Double(load(Int32.self, i))
                case 33: return Double(load(UInt32.self, i))
                case 24: return Double(load(Int64.self, i))
                case 34: return Double(load(UInt64.self, i))
                case 25:
                    let v = PackedBits.get(raw, index: i, bits: 4)
                    return Double(v >= 8 ? v - 16 : v)
                default: return Double(PackedBits.get(raw, index: i, bits: bits))
                }
            }
        }
    }

    // MARK: the program

    /// Reads `program`'s main function; `imageInput` is the input to lift scale / bias ops from.
    mutating func read(_ program: CoreML__Specification__MILProgram, imageInput: String?) throws -> (inputs: [GraphInput], outputs: [String]) {
        var function: CoreML__Specification__MILFunction?
        for i in 0..<program.n_functions {
            guard let e = program.functions[i]?.pointee else { continue }
            if cString(e.key) == "main" || function == nil { function = e.value?.pointee }
            if cString(e.key) == "main" { break }
        }
        guard let f = function else { throw ImportError.invalid(file: file, place: "mlProgram.functions", expected: "a function 'main'", actual: "none") }
        let opset = cString(f.opset)
        var block: CoreML__Specification__MILBlock?
        for i in 0..<f.n_block_specializations {
            guard let e = f.block_specializations[i]?.pointee else { continue }
            if cString(e.key) == opset || block == nil { block = e.value?.pointee }
        }
        guard let body = block else { throw ImportError.invalid(file: file, place: "function 'main'", expected: "a block for opset \(opset)", actual: "none") }
        let ops = (0..<body.n_operations).compactMap { body.operations[$0]?.pointee }
        try CoreMLProgramOps.checkSupported(ops, file: file)

        var inputs: [GraphInput] = []
        for i in 0..<f.n_inputs {
            guard let v = f.inputs[i]?.pointee else { continue }
            let n = cString(v.name)
            let (type, shape) = try tensorType(v.type, place: "function input '\(n)'", flexible: true)
            guard [10, 11].contains(type) else {
                throw ImportError.invalid(file: file, place: "function input '\(n)'", expected: "a float tensor (mltool computes in float32)", actual: "data type \(type)")
            }
            // The model description's shape (its flexible dimensions free) when it declares this input.
            g.b.shapes[n] = g.b.shapes[n].flatMap { $0.count == shape.count ? $0 : nil } ?? shape
            inputs.append(GraphInput(name: n, shape: Layout.irShape(shape)))
        }
        if let image = imageInput { liftPreprocessing(ops, image: image) }
        for (index, op) in ops.enumerated() {
            let type = cString(op.type)
            let outputs = (0..<op.n_outputs).map { cString(op.outputs[$0]?.pointee.name) }
            g.label = "op '\(outputs.first ?? "")' (\(type))"
            guard let converter = CoreMLProgramOps.converters[type] else { continue }
            // Every converter names its result after the op's first output.
            guard !outputs.isEmpty else {
                throw ImportError.invalid(file: file, place: "op \(index) of the main block (\(type))", expected: "at least one output", actual: "none")
            }
            if lifted.contains(outputs.first ?? "") { continue }
            try converter(&self, op, outputs)
        }
        let outputs = (0..<body.n_outputs).map { name(cString(body.outputs[$0])) }
        return (inputs, outputs)
    }

    /// Ops whose output became an alias of the image input.
    var lifted: Set<String> = []

    /// coremltools writes an image input's scale and bias as `mul` (scalar) then `add` (per channel) at the start
    /// of the program; when the image feeds only them, they become the model's preprocessing.
    private mutating func liftPreprocessing(_ ops: [Operation], image: String) {
        func uses(_ v: String) -> [Operation] {
            ops.filter { op in (0..<op.n_inputs).contains { i in
                guard let a = op.inputs[i]?.pointee.value?.pointee else { return false }
                return (0..<a.n_arguments).contains { cString(a.arguments[$0]?.pointee.name) == v }
            } }
        }
        func constValue(_ op: Operation, _ key: String) -> [Float]? {
            guard let b = bindings(op, key)?.first else { return nil }
            let n = cString(b.name)
            guard let c = ops.first(where: { cString($0.type) == "const" && $0.n_outputs == 1 && cString($0.outputs[0]?.pointee.name) == n }),
                  let attr = (0..<c.n_attributes).compactMap({ c.attributes[$0]?.pointee }).first(where: { cString($0.key) == "val" }),
                  let t = attr.value?.pointee.immediatevalue?.pointee.tensor?.pointee else { return nil }
            if let f = t.floats?.pointee { return (0..<f.n_values).map { f.values[$0] } }
            if let b = t.bytes?.pointee, b.values.len % 2 == 0, let d = b.values.data {
                let raw = UnsafeRawBufferPointer(start: d, count: b.values.len)
                return (0..<(b.values.len / 2)).map { Float(Float16(bitPattern: raw.loadUnaligned(fromByteOffset: $0 * 2, as: UInt16.self))) }
            }
            return nil
        }
        var current = image
        let steps: [(String, String)] = [("mul", "y"), ("add", "y")]
        for (type, key) in steps {
            let users = uses(current)
            guard users.count == 1, let op = users.first, cString(op.type) == type, op.n_outputs == 1,
                  let v = constValue(op, key), v.count == 1 || v.count == 3 || (type == "mul" && v.count == 1) else { continue }
            let out = cString(op.outputs[0]?.pointee.name)
            if type == "mul" {
                guard v.count == 1 else { continue }
                imageScale = v[0]
            } else {
                imageBias = v
            }
            alias[out] = image
            lifted.insert(out)
            current = out
        }
    }
}
