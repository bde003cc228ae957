import MLToolCore

/// The TFLite Support metadata of an exported image classifier (tflite-support metadata_schema.fbs, file identifier
/// "M001", parser version 1.0.0), which the Task Library's ImageClassifier and Android Studio's ML binding read:
/// ModelMetadata (name, description, version, author, license) → one SubGraphMetadata → the input's TensorMetadata
/// (ImageProperties: RGB or GRAYSCALE and the image size; a NormalizationOptions process unit with mean and std on
/// 0…255 pixels) and the output's (an AssociatedFile "labels.txt" of type TENSOR_AXIS_LABELS). The label file itself
/// is appended to the .tflite file as a zip archive (stored, offsets from the start of the file), as the Task
/// Library's MetadataPopulator does; the interpreter reads only the flatbuffer before it.
enum TFLiteMetadata {
    static let labelFile = "labels.txt"

    /// The metadata flatbuffer, and a note when the preprocessing cannot be written as one (mean, std) per channel.
    /// `valueLabels`: the output holds class indices (a detector's `detected_labels`), so labels.txt is its
    /// TENSOR_VALUE_LABELS file, not TENSOR_AXIS_LABELS.
    static func buffer(_ md: ModelMetadata, input: String, output: String, valueLabels: Bool = false,
                       notes: inout [String]) throws -> [UInt8] {
        var b = FlatBufferBuilder()
        var inputFields: [(slot: Int, offset: FlatBufferBuilder.Offset)] = []
        if let p = md.image {
            // value = (pixel·scale + bias − mean) / std = (pixel − m) / s with m = (mean − bias) / scale, s = std / scale.
            let channels = p.colorOrder == "gray" ? 1 : 3
            if p.scale != 0, p.bias.count == channels, p.mean.count == channels, p.std.count == channels {
                let mean = b.vector((0..<channels).map { (p.mean[$0] - p.bias[$0]) / p.scale })
                let std = b.vector((0..<channels).map { p.std[$0] / p.scale })
                b.startTable()
                b.add(0, mean)
                b.add(1, std)
                let normalization = b.endTable()
                b.startTable()
                b.add(0, UInt8(1))          // ProcessUnitOptions.NormalizationOptions
                b.add(1, normalization)
                inputFields.append((4, b.vector([b.endTable()])))
            } else {
                notes.append("TFLite metadata: no NormalizationOptions (the preprocessing has no one mean and std per channel)")
            }
            if p.colorOrder == "bgr" { notes.append("TFLite metadata: colour space UNKNOWN (the model takes BGR)") }
            b.startTable()
            b.add(0, UInt32(truncatingIfNeeded: p.width))
            b.add(1, UInt32(truncatingIfNeeded: p.height))
            let size = b.endTable()
            b.startTable()
            b.add(0, Int8(p.colorOrder == "rgb" ? 1 : p.colorOrder == "gray" ? 2 : 0))
            b.add(1, size)
            let image = b.endTable()
            b.startTable()
            b.add(0, UInt8(2))              // ContentProperties.ImageProperties
            b.add(1, image)
            inputFields.append((3, b.endTable()))
        }
        let inputName = b.string(input)
        b.startTable()
        b.add(0, inputName)
        for f in inputFields { b.add(f.slot, f.offset) }
        let inputMetadata = b.endTable()

        var labels: FlatBufferBuilder.Offset?
        if !md.labels.isEmpty {
            let name = b.string(labelFile), about = b.string("one label per class, in the order of the output")
            b.startTable()
            b.add(0, name)
            b.add(1, about)
            b.add(2, Int8(valueLabels ? 3 : 2))  // AssociatedFileType.TENSOR_VALUE_LABELS or TENSOR_AXIS_LABELS
            labels = b.vector([b.endTable()])
        }
        let outputName = b.string(output)
        let outputKind = b.string(md.outputKind ?? "")
        b.startTable()
        b.add(0, outputName)
        b.add(1, outputKind)
        b.add(6, labels)
        let outputMetadata = b.endTable()

        let inputs = b.vector([inputMetadata]), outputs = b.vector([outputMetadata])
        b.startTable()
        b.add(2, inputs)
        b.add(3, outputs)
        let subgraphs = b.vector([b.endTable()])
        let strings = [md.name ?? "mltool", md.description ?? "", md.version ?? "", md.author ?? "", md.license ?? ""]
            .map { $0.isEmpty ? nil : b.string($0) }
        let parser = b.string("1.0.0")
        b.startTable()
        b.add(0, strings[0])
        b.add(1, strings[1])
        b.add(2, strings[2])
        b.add(3, subgraphs)
        b.add(4, strings[3])
        b.add(5, strings[4])
        b.add(7, parser)
        return try b.finish(b.endTable(), identifier: "M001")
    }

    /// A zip archive of `files` (stored, no compression) for appending after `prefixLength` bytes of another file:
    /// every offset counts from the start of that file.
    static func zip(_ files: [(name: String, data: [UInt8])], prefixLength: Int) -> [UInt8] {
        var out = [UInt8](), central = [UInt8]()
        func le16(_ v: Int, _ a: inout [UInt8]) { a += [UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8)] }
        func le32(_ v: Int, _ a: inout [UInt8]) { for k in 0..<4 { a.append(UInt8(truncatingIfNeeded: v >> (8 * k))) } }
        for f in files {
            let name = Array(f.name.utf8), crc = Int(crc32(f.data)), offset = prefixLength + out.count
            // Local file header: version 1.0, no flags, stored, no time, CRC, sizes, name.
            le32(0x0403_4b50, &out); le16(10, &out); le16(0, &out); le16(0, &out); le16(0, &out); le16(0x21, &out)
            le32(crc, &out); le32(f.data.count, &out); le32(f.data.count, &out); le16(name.count, &out); le16(0, &out)
            out += name + f.data
            // Central directory entry.
            le32(0x0201_4b50, &central); le16(20, &central); le16(10, &central); le16(0, &central); le16(0, &central)
            le16(0, &central); le16(0x21, &central); le32(crc, &central); le32(f.data.count, &central)
            le32(f.data.count, &central); le16(name.count, &central); le16(0, &central); le16(0, &central)
            le16(0, &central); le16(0, &central); le32(0, &central); le32(offset, &central)
            central += name
        }
        let centralOffset = prefixLength + out.count
        out += central
        // End of central directory.
        le32(0x0605_4b50, &out); le16(0, &out); le16(0, &out); le16(files.count, &out); le16(files.count, &out)
        le32(central.count, &out); le32(centralOffset, &out); le16(0, &out)
        return out
    }

    /// CRC-32 (IEEE 802.3, reflected, as zip uses).
    static func crc32(_ data: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xffff_ffff
        for byte in data {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xedb8_8320 : crc >> 1 }
        }
        return ~crc
    }
}
