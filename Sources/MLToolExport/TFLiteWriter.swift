/// Packs a `TFLiteProgram` into TensorFlow Lite flatbuffer bytes: file identifier "TFL3", schema version 3.
///
/// Field slots follow schema.fbs (Model: version, operator_codes, subgraphs, description, buffers, metadata_buffer,
/// metadata; SubGraph: tensors, inputs, outputs, operators, name; Tensor: shape, type, buffer, name, …,
/// quantization at 4, shape_signature at 7; QuantizationParameters: scale at 2, zero_point at 3, quantized_dimension
/// at 6; Operator: opcode_index, inputs, outputs, builtin_options_type, builtin_options;
/// OperatorCode: deprecated_builtin_code, custom_code, version, builtin_code; Buffer: data, 16-byte aligned).
enum TFLiteWriter {
    static let schemaVersion: UInt32 = 3

    static func pack(_ p: TFLiteProgram, modelName: String) throws -> [UInt8] {
        let weightBytes = p.buffers.reduce(0) { $0 + $1.count }
        var b = FlatBufferBuilder(capacity: weightBytes + 64 * 1024)
        // Buffers first: the large data sits at the end of the file, behind everything that points at it.
        let buffers = Self.buffers(p, &b)
        // One OperatorCode per operator used, in order of first use.
        var codes = [TFLiteProgram.Operator]()
        for n in p.nodes where !codes.contains(n.op) { codes.append(n.op) }
        let operatorCodes = Self.operatorCodes(codes, &b)
        let main = subgraph(p, codes, &b)
        let subgraphs = b.vector([main])
        var metadataOffsets = [FlatBufferBuilder.Offset]()
        for m in p.metadata {
            let name = b.string(m.name)
            b.startTable()
            b.add(0, name)
            b.add(1, UInt32(truncatingIfNeeded: m.buffer))
            metadataOffsets.append(b.endTable())
        }
        let metadata = p.metadata.isEmpty ? nil : b.vector(metadataOffsets)
        let description = b.string(p.description)
        b.startTable()
        b.add(0, schemaVersion)
        b.add(1, operatorCodes)
        b.add(2, subgraphs)
        b.add(3, description)
        b.add(4, buffers)
        b.add(6, metadata)
        let model = b.endTable()
        do {
            return try b.finish(model, identifier: "TFL3")
        } catch let e as FlatBufferBuilder.TooLarge {
            throw ExportError.encoding(model: modelName, format: "TensorFlow Lite",
                                       reason: "\(e.size) bytes: a flatbuffer holds at most 2 GiB (32-bit offsets)")
        }
    }

    /// The Buffer tables (their data 16-byte aligned; an empty one has none).
    private static func buffers(_ p: TFLiteProgram, _ b: inout FlatBufferBuilder) -> FlatBufferBuilder.Offset {
        var bufferOffsets = [FlatBufferBuilder.Offset]()
        for data in p.buffers {
            let bytes = data.isEmpty ? nil : b.bytes(data, alignment: 16)
            b.startTable()
            b.add(0, bytes)
            bufferOffsets.append(b.endTable())
        }
        return b.vector(bufferOffsets)
    }

    private static func operatorCodes(_ codes: [TFLiteProgram.Operator], _ b: inout FlatBufferBuilder) -> FlatBufferBuilder.Offset {
        var codeOffsets = [FlatBufferBuilder.Offset]()
        for op in codes {
            b.startTable()
            // deprecated_builtin_code is an int8: the real code when it fits, else PLACEHOLDER_FOR_GREATER_OP_CODES.
            b.add(0, Int8(op.rawValue < 127 ? op.rawValue : 127))
            b.add(3, op.rawValue)
            codeOffsets.append(b.endTable())
        }
        return b.vector(codeOffsets)
    }

    /// The one SubGraph: its tensors, inputs, outputs, operators (by their index in `codes`) and name.
    private static func subgraph(_ p: TFLiteProgram, _ codes: [TFLiteProgram.Operator], _ b: inout FlatBufferBuilder) -> FlatBufferBuilder.Offset {
        var tensorOffsets = [FlatBufferBuilder.Offset]()
        for t in p.tensors {
            let shape = b.vector(t.shape.map { Int32(clamping: $0) })
            let signature = t.signature.map { b.vector($0.map { Int32(clamping: $0) }) }
            let name = b.string(t.name)
            let quantization = t.quantization.map { quantizationTable($0, &b) }
            b.startTable()
            b.add(0, shape)
            b.add(1, t.type.rawValue)
            b.add(2, UInt32(truncatingIfNeeded: t.buffer))
            b.add(3, name)
            b.add(4, quantization)
            b.add(7, signature)
            tensorOffsets.append(b.endTable())
        }
        let tensors = b.vector(tensorOffsets)

        var operatorOffsets = [FlatBufferBuilder.Offset]()
        for n in p.nodes {
            let inputs = b.vector(n.inputs.map { Int32(clamping: $0) })
            let outputs = b.vector(n.outputs.map { Int32(clamping: $0) })
            let options = n.optionsType.map { _ in table(n.options, &b) }
            b.startTable()
            b.add(0, UInt32(truncatingIfNeeded: codes.firstIndex(of: n.op) ?? 0))
            b.add(1, inputs)
            b.add(2, outputs)
            b.add(3, n.optionsType?.rawValue ?? 0)
            b.add(4, options)
            operatorOffsets.append(b.endTable())
        }
        let operators = b.vector(operatorOffsets)
        let subgraphInputs = b.vector(p.inputs.map { Int32(clamping: $0) })
        let subgraphOutputs = b.vector(p.outputs.map { Int32(clamping: $0) })
        let subgraphName = b.string("main")
        b.startTable()
        b.add(0, tensors)
        b.add(1, subgraphInputs)
        b.add(2, subgraphOutputs)
        b.add(3, operators)
        b.add(4, subgraphName)
        return b.endTable()
    }

    /// A QuantizationParameters table.
    private static func quantizationTable(_ q: TFLiteProgram.Quantization, _ b: inout FlatBufferBuilder) -> FlatBufferBuilder.Offset {
        let scales = b.vector(q.scales)
        let zeroPoints = b.vector(q.zeroPoints)
        b.startTable()
        b.add(2, scales)
        b.add(3, zeroPoints)
        b.add(6, Int32(clamping: q.axis))
        return b.endTable()
    }

    /// An options table from its fields.
    private static func table(_ fields: [TFLiteProgram.Field], _ b: inout FlatBufferBuilder) -> FlatBufferBuilder.Offset {
        // Vectors are children: written before the table starts.
        var vectors = [Int: FlatBufferBuilder.Offset]()
        for case let .ints(slot, v) in fields { vectors[slot] = b.vector(v) }
        b.startTable()
        for f in fields {
            switch f {
            case let .int8(slot, v): b.add(slot, v)
            case let .int32(slot, v, d): b.add(slot, v, default: d)
            case let .float(slot, v): b.add(slot, v)
            case let .bool(slot, v): b.add(slot, v)
            case let .ints(slot, _): b.add(slot, vectors[slot])
            }
        }
        return b.endTable()
    }
}
