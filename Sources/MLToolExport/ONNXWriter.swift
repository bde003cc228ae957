import COnnxProto
import CProtobufC
import Foundation
import MLToolCore

/// Packs an `ONNXProgram` into ONNX ModelProto bytes with the protobuf-c code the importer parses with.
enum ONNXWriter {
    static func pack(_ p: ONNXProgram, modelName: String) throws -> [UInt8] {
        let arena = CArena()

        var nodes = [Onnx__NodeProto]()
        for n in p.nodes {
            var node = Onnx__NodeProto()
            onnx__node_proto__init(&node)
            node.op_type = arena.string(n.op)
            node.name = arena.string(n.name)
            if !n.domain.isEmpty { node.domain = arena.string(n.domain) }
            node.n_input = n.inputs.count; node.input = arena.strings(n.inputs)
            node.n_output = n.outputs.count; node.output = arena.strings(n.outputs)
            let attrs = n.attributes.map { attribute($0.0, $0.1, arena) }
            node.n_attribute = attrs.count; node.attribute = arena.messages(attrs)
            nodes.append(node)
        }
        var inits = [Onnx__TensorProto]()
        for i in p.initializers {
            var t = Onnx__TensorProto()
            onnx__tensor_proto__init(&t)
            t.name = arena.string(i.name)
            t.has_data_type = 1; t.data_type = i.dataType
            t.n_dims = i.dims.count; t.dims = arena.array(i.dims.map(Int64.init))
            let (len, data) = arena.bytes(i.raw)
            t.has_raw_data = 1; t.raw_data = ProtobufCBinaryData(len: len, data: data)
            inits.append(t)
        }

        var graph = Onnx__GraphProto()
        onnx__graph_proto__init(&graph)
        graph.name = arena.string(p.graphName)
        graph.n_node = nodes.count; graph.node = arena.messages(nodes)
        graph.n_initializer = inits.count; graph.initializer = arena.messages(inits)
        let ins = p.inputs.map { valueInfo($0, arena) }, outs = p.outputs.map { valueInfo($0, arena) }
        graph.n_input = ins.count; graph.input = arena.messages(ins)
        graph.n_output = outs.count; graph.output = arena.messages(outs)

        var opset = Onnx__OperatorSetIdProto()
        onnx__operator_set_id_proto__init(&opset)
        opset.domain = arena.string("")
        opset.has_version = 1; opset.version = ONNXProgram.opset
        var opsets = [opset]
        for (domain, version) in p.extraOpsets {
            var o = Onnx__OperatorSetIdProto()
            onnx__operator_set_id_proto__init(&o)
            o.domain = arena.string(domain)
            o.has_version = 1; o.version = version
            opsets.append(o)
        }

        var props = [Onnx__StringStringEntryProto]()
        for (k, v) in p.metadata {
            var e = Onnx__StringStringEntryProto()
            onnx__string_string_entry_proto__init(&e)
            e.key = arena.string(k); e.value = arena.string(v)
            props.append(e)
        }

        var model = Onnx__ModelProto()
        onnx__model_proto__init(&model)
        model.has_ir_version = 1; model.ir_version = ONNXProgram.irVersion
        model.producer_name = arena.string("mltool")
        model.producer_version = arena.string(MLToolInfo.version)
        model.has_model_version = 1; model.model_version = p.modelVersion
        model.doc_string = arena.string(p.docString)
        model.graph = arena.new(graph)
        model.n_opset_import = opsets.count; model.opset_import = arena.messages(opsets)
        model.n_metadata_props = props.count; model.metadata_props = arena.messages(props)

        let size = onnx__model_proto__get_packed_size(&model)
        var out = [UInt8](repeating: 0, count: size)
        let written = out.withUnsafeMutableBufferPointer { onnx__model_proto__pack(&model, $0.baseAddress) }
        guard written == size else {
            throw ExportError.encoding(model: modelName, format: "ONNX", reason: "packed \(written) of \(size) bytes")
        }
        return out
    }

    private static func attribute(_ name: String, _ v: ONNXProgram.AttributeValue, _ arena: CArena) -> Onnx__AttributeProto {
        var a = Onnx__AttributeProto()
        onnx__attribute_proto__init(&a)
        a.name = arena.string(name)
        a.has_type = 1
        switch v {
        case let .int(i): a.type = 2; a.has_i = 1; a.i = Int64(i)
        case let .float(f): a.type = 1; a.has_f = 1; a.f = f
        case let .ints(list): a.type = 7; a.n_ints = list.count; a.ints = arena.array(list.map(Int64.init))
        case let .string(s):
            a.type = 3
            let (len, data) = arena.bytes(Array(s.utf8))
            a.has_s = 1; a.s = ProtobufCBinaryData(len: len, data: data)
        case let .floats(list): a.type = 6; a.n_floats = list.count; a.floats = arena.array(list)
        case let .strings(list):
            a.type = 8
            a.n_strings = list.count
            a.strings = arena.array(list.map { s -> ProtobufCBinaryData in
                let (len, data) = arena.bytes(Array(s.utf8))
                return ProtobufCBinaryData(len: len, data: data)
            })
        }
        return a
    }

    private static func valueInfo(_ v: ONNXProgram.Value, _ arena: CArena) -> Onnx__ValueInfoProto {
        var tensor = Onnx__TypeProto__Tensor()
        onnx__type_proto__tensor__init(&tensor)
        tensor.has_elem_type = 1; tensor.elem_type = v.elemType
        do {
            let dims = v.dims
            var shape = Onnx__TensorShapeProto()
            onnx__tensor_shape_proto__init(&shape)
            let list = dims.map { d -> Onnx__TensorShapeProto__Dimension in
                var dim = Onnx__TensorShapeProto__Dimension()
                onnx__tensor_shape_proto__dimension__init(&dim)
                if d >= 0 {
                    dim.value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE
                    dim.dim_value = Int64(d)
                } else if d == -1 {
                    dim.value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM
                    dim.dim_param = arena.string("N")
                } else if d == -3 {
                    dim.value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM
                    dim.dim_param = arena.string("K")
                }
                return dim
            }
            shape.n_dim = list.count; shape.dim = arena.messages(list)
            tensor.shape = arena.new(shape)
        }
        var type = Onnx__TypeProto()
        onnx__type_proto__init(&type)
        type.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE
        type.tensor_type = arena.new(tensor)
        var info = Onnx__ValueInfoProto()
        onnx__value_info_proto__init(&info)
        info.name = arena.string(v.name)
        info.type = arena.new(type)
        return info
    }
}
