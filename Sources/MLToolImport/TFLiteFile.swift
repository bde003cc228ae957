import Foundation
import MLToolCore

/// The subset of TensorFlow Lite's schema (schema.fbs, LiteRT 2.3) the importer reads, decoded from a `FlatBuffer`.
///
/// Field slots, as schema.fbs declares them (a union takes two: its type, then its table):
/// - Model: version 0, operator_codes 1, subgraphs 2, description 3, buffers 4, metadata 6.
/// - OperatorCode: deprecated_builtin_code 0 (int8), custom_code 1, version 2, builtin_code 3 (int32); the code is
///   the larger of the two, as TFLite reads it (files before 2.4 only have the int8 one).
/// - SubGraph: tensors 0, inputs 1, outputs 2, operators 3, name 4.
/// - Tensor: shape 0, type 1, buffer 2, name 3, quantization 4, is_variable 5, sparsity 6, shape_signature 7.
/// - QuantizationParameters: scale 2, zero_point 3, quantized_dimension 6.
/// - Operator: opcode_index 0, inputs 1, outputs 2, builtin_options 3–4, custom_options 5.
/// - Buffer: data 0, offset 1, size 2 (offset > 1: `size` bytes at `offset` from the file's start, after the
///   flatbuffer, as files over 2 GB and ai-edge-quantizer's are written).
struct TFLiteFile {
    struct OperatorCode {
        var builtin: Int32
        var custom: String?
        /// "CONV_2D", or "CUSTOM:<custom_code>".
        var name: String { builtin == Self.customCode ? "CUSTOM:\(custom ?? "")" : TFLiteOperators.name(builtin) }
        static let customCode: Int32 = 32
    }

    struct Quantization {
        var scales: [Float]
        var zeroPoints: [Int64]
        var dimension: Int
    }

    struct Tensor {
        var name: String
        var shape: [Int]
        /// The shape with −1 for free dimensions; nil when the file has none.
        var shapeSignature: [Int]?
        var type: Int8
        var buffer: Int
        var quantization: Quantization?
        var isVariable: Bool
        var sparsity: TFLiteSparsity?
        var isSparse: Bool { sparsity != nil }
    }

    struct Operator {
        var opcode: Int
        /// Tensor indices; −1 for an absent optional input.
        var inputs: [Int]
        var outputs: [Int]
        /// The builtin options table (union type, table), when present.
        var options: (type: UInt8, table: FlatBuffer.Table)?
        /// The bytes of custom_options in the file.
        var customOptions: Range<Int>?
    }

    struct SubGraph {
        var name: String
        var tensors: [Tensor]
        var inputs: [Int]
        var outputs: [Int]
        var operators: [Operator]
    }

    /// TensorType names by code (schema.fbs).
    static let typeNames = ["float32", "float16", "int32", "uint8", "int64", "string", "bool", "int16", "complex64",
                            "int8", "float64", "complex128", "uint64", "resource", "variant", "uint32", "uint16", "int4",
                            "bfloat16", "int2"]

    static func typeName(_ type: Int8) -> String {
        type >= 0 && Int(type) < typeNames.count ? typeNames[Int(type)] : "type \(type)"
    }

    /// The file identifier TFLite writes at byte 4.
    static let identifier = "TFL3"

    let flat: FlatBuffer
    var version: UInt32
    var description: String?
    var operatorCodes: [OperatorCode]
    var subgraphs: [SubGraph]
    /// Each buffer's bytes in the file (empty for buffer 0 and for tensors computed at run time).
    var buffers: [Range<Int>]
    /// Model.metadata: each entry's name and buffer index (checked against `buffers` by its reader).
    var metadata: [(name: String, buffer: Int)]

    var file: String { flat.file }

    /// Reads the TFLite file at `path` (the whole file: the flatbuffer holds the weights).
    init(path: String) throws {
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path), options: .mappedIfSafe) } catch {
            throw ImportError.unreadable(file: path, reason: error.localizedDescription)
        }
        try self.init(bytes: [UInt8](data), file: path)
    }

    init(bytes: [UInt8], file: String) throws {
        let fb = FlatBuffer(bytes: bytes, file: file)
        guard fb.identifier == Self.identifier else {
            throw ImportError.invalid(file: file, place: "byte 4: file identifier", expected: "\"\(Self.identifier)\"",
                                      actual: fb.identifier.map { "\"\($0)\"" } ?? "a file of \(bytes.count) bytes")
        }
        flat = fb
        let model = try fb.root("Model")
        version = try fb.uint32(model, 0, "version")
        guard version == 3 else {
            throw ImportError.invalid(file: file, place: "byte \(model.position): Model.version", expected: "3",
                                      actual: "\(version)")
        }
        description = try fb.string(model, 3, "description")
        operatorCodes = try fb.tables(model, 1, "operator_codes").map { t in
            let deprecated = Int32(try fb.int8(t, 0, "deprecated_builtin_code"))
            let builtin = try fb.int32(t, 3, "builtin_code")
            return OperatorCode(builtin: max(deprecated, builtin), custom: try fb.string(t, 1, "custom_code"))
        }
        buffers = try fb.tables(model, 4, "buffers").map { t in
            let offset = try fb.uint64(t, 1, "offset")
            guard offset > 1 else { return try fb.byteRange(t, 0, "data") ?? 0..<0 }
            // Data after the flatbuffer (what ai-edge-quantizer and files over 2 GB write): `size` bytes at `offset`
            // from the start of the file.
            let size = try fb.uint64(t, 2, "size")
            guard offset <= UInt64(bytes.count), size <= UInt64(bytes.count) - offset else {
                throw ImportError.invalid(file: file, place: "byte \(t.position): \(t.what).offset",
                                          expected: "offset + size inside the file's \(bytes.count) bytes", actual: "offset \(offset), size \(size)")
            }
            return Int(offset)..<Int(offset + size)
        }
        metadata = try fb.tables(model, 6, "metadata").map { t in
            (try fb.string(t, 0, "name") ?? "", Int(try fb.uint32(t, 1, "buffer")))
        }
        let graphs = try fb.tables(model, 2, "subgraphs")
        subgraphs = try graphs.map { try Self.subgraph($0, fb) }
        guard !subgraphs.isEmpty else {
            throw ImportError.invalid(file: file, place: "byte \(model.position): Model.subgraphs", expected: "at least one subgraph",
                                      actual: "none")
        }
    }

    private static func subgraph(_ t: FlatBuffer.Table, _ fb: FlatBuffer) throws -> SubGraph {
        let tensors = try fb.tables(t, 0, "tensors").map { try tensor($0, fb) }
        let operators = try fb.tables(t, 3, "operators").map { o in
            let type = try fb.uint8(o, 3, "builtin_options_type")
            let options = try fb.table(o, 4, "builtin_options")
            return Operator(opcode: Int(try fb.uint32(o, 0, "opcode_index")),
                            inputs: try (fb.int32s(o, 1, "inputs") ?? []).map(Int.init),
                            outputs: try (fb.int32s(o, 2, "outputs") ?? []).map(Int.init),
                            options: options.map { (type, $0) },
                            customOptions: try fb.byteRange(o, 5, "custom_options"))
        }
        return SubGraph(name: try fb.string(t, 4, "name") ?? "",
                        tensors: tensors,
                        inputs: try (fb.int32s(t, 1, "inputs") ?? []).map(Int.init),
                        outputs: try (fb.int32s(t, 2, "outputs") ?? []).map(Int.init),
                        operators: operators)
    }

    private static func tensor(_ t: FlatBuffer.Table, _ fb: FlatBuffer) throws -> Tensor {
        var quantization: Quantization?
        if let q = try fb.table(t, 4, "quantization"), let scales = try fb.float32s(q, 2, "scale"), !scales.isEmpty {
            quantization = Quantization(scales: scales, zeroPoints: try fb.int64s(q, 3, "zero_point") ?? [],
                                        dimension: Int(try fb.int32(q, 6, "quantized_dimension")))
        }
        return Tensor(name: try fb.string(t, 3, "name") ?? "",
                      shape: try (fb.int32s(t, 0, "shape") ?? []).map(Int.init),
                      shapeSignature: try fb.int32s(t, 7, "shape_signature").map { $0.map(Int.init) },
                      type: try fb.int8(t, 1, "type"),
                      buffer: Int(try fb.uint32(t, 2, "buffer")),
                      quantization: quantization,
                      isVariable: try fb.bool(t, 5, "is_variable"),
                      sparsity: try fb.table(t, 6, "sparsity").map { try TFLiteSparsity($0, fb) })
    }
}
