import COnnxProto
import CProtobufC
import Foundation
import MLToolCore

/// An ONNX model file parsed into plain Swift values (the protobuf-c structures are freed before this returns).
struct ONNXFile {
    struct Attribute {
        var name: String
        var type: Int32
        var f: Float?
        var i: Int?
        var s: String?
        var t: ONNXConstant?
        var floats: [Float] = []
        var ints: [Int] = []
        var strings: [String] = []
        /// A GRAPH attribute (If's `then_branch` / `else_branch`, the body of Loop and Scan).
        var g: Subgraph?
    }

    /// The graph of a GRAPH attribute. Its inputs and outputs are matched by position (an If branch has no inputs; a
    /// Loop or Scan body takes the iteration's values); any other name it reads is a tensor of an enclosing graph.
    struct Subgraph {
        var nodes: [Node]
        var initializers: [String: ONNXConstant]
        var inputs: [ValueInfo]
        var outputs: [ValueInfo]
    }

    struct Node {
        var name: String
        var opType: String
        var domain: String
        var inputs: [String]
        var outputs: [String]
        var attributes: [String: Attribute]
        /// How errors name the node when it was made from another format (a Core ML layer or MIL op).
        var label: String? = nil
    }

    struct ValueInfo {
        var name: String
        /// Dimensions; -1 where the file names a parameter instead of a value. nil when the file gives no shape.
        var shape: [Int]?
        /// TensorProto.DataType of the elements (1 = float), nil when the file does not say.
        var elemType: Int32? = nil
        /// The file's name of each dimension given by name (`dim_param`), "" for the others.
        var dimensionNames: [String] = []
    }

    var irVersion: Int
    /// Version of the default ("" / "ai.onnx") operator set.
    var opset: Int
    var producer: String
    /// The model's `metadata_props` (the last value wins for a repeated key).
    var metadata: [String: String]
    var nodes: [Node]
    var initializers: [String: ONNXConstant]
    var inputs: [ValueInfo]
    var outputs: [ValueInfo]

    /// Reads and parses `path`. Tensors with external data are read from files inside the model's directory only.
    init(path: String) throws {
        let fm = FileManager.default
        var isDir: ObjCBool = false
        guard fm.fileExists(atPath: path, isDirectory: &isDir), !isDir.boolValue else {
            throw ImportError.unreadable(file: path, reason: isDir.boolValue ? "is a directory" : "no such file")
        }
        guard let data = fm.contents(atPath: path) else {
            throw ImportError.unreadable(file: path, reason: "permission denied or I/O error")
        }
        guard !data.isEmpty else { throw ImportError.malformed(file: path, reason: "the file is empty") }
        let model = try ProtobufWire.unpack(data, onnx__model_proto__descriptor, file: path, format: "an ONNX protobuf") {
            onnx__model_proto__unpack(nil, $0, $1)
        }
        defer { onnx__model_proto__free_unpacked(model, nil) }
        let m = model.pointee
        guard m.has_ir_version != 0, let g = m.graph else {
            throw ImportError.malformed(file: path, reason: "no ir_version or no graph (not an ONNX model)")
        }
        irVersion = Int(m.ir_version)
        guard irVersion >= 3 else {
            throw ImportError.invalid(file: path, place: "ir_version", expected: "3 or later", actual: "\(irVersion)")
        }
        producer = str(m.producer_name)
        var props: [String: String] = [:]
        for i in 0..<m.n_metadata_props {
            guard let e = m.metadata_props[i]?.pointee else { continue }
            props[str(e.key)] = str(e.value)
        }
        metadata = props
        var opset: Int?
        for i in 0..<m.n_opset_import {
            guard let o = m.opset_import[i]?.pointee else { continue }
            let domain = str(o.domain)
            if domain == "" || domain == "ai.onnx" { opset = Int(o.version) }
        }
        guard let opsetVersion = opset else {
            throw ImportError.invalid(file: path, place: "opset_import", expected: "the default ai.onnx opset",
                                      actual: "none")
        }
        self.opset = opsetVersion

        let graph = try Self.subgraph(g.pointee, reader: TensorReader(file: path))
        initializers = graph.initializers
        inputs = graph.inputs
        outputs = graph.outputs
        nodes = graph.nodes
    }

    /// Reads a graph (the model's, or a GRAPH attribute's, recursively: protobuf-c has unpacked them all, within
    /// `ProtobufWire`'s depth limit).
    private static func subgraph(_ graph: Onnx__GraphProto, reader: TensorReader) throws -> Subgraph {
        var inits: [String: ONNXConstant] = [:]
        for i in 0..<graph.n_initializer {
            guard let t = graph.initializer[i] else { continue }
            let name = str(t.pointee.name)
            inits[name] = try reader.read(t, place: "initializer '\(name)'")
        }
        var nodes: [Node] = []
        nodes.reserveCapacity(graph.n_node)
        for i in 0..<graph.n_node {
            guard let np = graph.node[i] else { continue }
            let n = np.pointee
            let op = str(n.op_type)
            var name = str(n.name)
            if name.isEmpty { name = "\(op)_\(i)" }
            var attrs: [String: Attribute] = [:]
            for k in 0..<n.n_attribute {
                guard let ap = n.attribute[k] else { continue }
                let a = ap.pointee
                let aname = str(a.name)
                var attr = Attribute(name: aname, type: (a.has_type != 0) ? a.type : 0)
                if a.has_f != 0 { attr.f = a.f }
                if a.has_i != 0 { attr.i = Int(a.i) }
                if a.has_s != 0 { attr.s = bytesString(a.s) }
                if let t = a.t { attr.t = try reader.read(t, place: "node '\(name)' attribute '\(aname)'") }
                if a.n_floats > 0 { attr.floats = Array(UnsafeBufferPointer(start: a.floats, count: a.n_floats)) }
                if a.n_ints > 0 { attr.ints = UnsafeBufferPointer(start: a.ints, count: a.n_ints).map { Int($0) } }
                if a.n_strings > 0 { attr.strings = UnsafeBufferPointer(start: a.strings, count: a.n_strings).map(bytesString) }
                if let g = a.g { attr.g = try subgraph(g.pointee, reader: reader) }
                attrs[aname] = attr
            }
            nodes.append(Node(name: name, opType: op, domain: str(n.domain),
                              inputs: (0..<n.n_input).map { str(n.input[$0]) },
                              outputs: (0..<n.n_output).map { str(n.output[$0]) }, attributes: attrs))
        }
        return Subgraph(nodes: nodes, initializers: inits,
                        inputs: (0..<graph.n_input).compactMap { graph.input[$0].map { valueInfo($0.pointee) } },
                        outputs: (0..<graph.n_output).compactMap { graph.output[$0].map { valueInfo($0.pointee) } })
    }
}

/// A proto2 string field (NULL when unset).
func str(_ p: UnsafeMutablePointer<CChar>?) -> String {
    guard let p else { return "" }
    return String(cString: p)
}

private func bytesString(_ b: ProtobufCBinaryData) -> String {
    guard b.len > 0, let d = b.data else { return "" }
    return String(decoding: UnsafeBufferPointer(start: d, count: b.len), as: UTF8.self)
}

private func valueInfo(_ v: Onnx__ValueInfoProto) -> ONNXFile.ValueInfo {
    let name = str(v.name)
    guard let t = v.type?.pointee, t.value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE else { return .init(name: name, shape: nil) }
    let elemType = t.tensor_type.flatMap { $0.pointee.has_elem_type != 0 ? $0.pointee.elem_type : nil }
    guard let shapeProto = t.tensor_type?.pointee.shape?.pointee else { return .init(name: name, shape: nil, elemType: elemType) }
    let dims: [Int] = (0..<shapeProto.n_dim).map { i in
        guard let d = shapeProto.dim[i]?.pointee, d.value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE,
              d.dim_value >= 0, d.dim_value < Int64(Int32.max) else { return -1 }
        return Int(d.dim_value)
    }
    let names: [String] = (0..<shapeProto.n_dim).map { i in
        guard let d = shapeProto.dim[i]?.pointee, d.value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM else { return "" }
        return str(d.dim_param)
    }
    return .init(name: name, shape: dims, elemType: elemType, dimensionNames: names)
}
