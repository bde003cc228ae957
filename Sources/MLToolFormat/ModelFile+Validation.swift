import MLToolCore

extension ModelFile {
    /// Checks one tensor table entry (docs/FORMAT.md sections 4.1, 5 and rule 10, all but its place in the data
    /// section) and records its name in `firstIndex`. Returns its dtype and the number of bits its elements use.
    static func validate(_ e: TensorEntry, index: Int, firstIndex: inout [String: Int], file: String)
        throws -> (dtype: DType, bits: Int) {
        func bad(_ field: String, _ expected: String, _ actual: String) -> FormatError {
            .badTensor(file: file, tensor: e.name, field: field, expected: expected, actual: actual)
        }
        let nameBytes = e.name.utf8.count
        guard nameBytes >= 1, nameBytes <= FileHeader.maxNameBytes else {
            throw FormatError.badTensor(file: file, tensor: String(e.name.prefix(64)) + (nameBytes > 64 ? "…" : ""),
                                        field: "name", expected: "1 to \(FileHeader.maxNameBytes) bytes of UTF-8",
                                        actual: "\(nameBytes) bytes")
        }
        if let first = firstIndex[e.name] {
            throw FormatError.duplicateName(file: file, tensor: e.name, index: index, firstIndex: first)
        }
        firstIndex[e.name] = index
        guard let dtype = DType(name: e.dtype) else {
            let names = DType.allCases.map(\.name).joined(separator: ", ")
            throw bad("dtype", "one of \(names)", "'\(e.dtype)'")
        }
        guard e.shape.count <= FileHeader.maxRank else {
            throw bad("shape", "rank ≤ \(FileHeader.maxRank)", "rank \(e.shape.count)")
        }
        guard e.shape.allSatisfy({ $0 >= 0 }) else { throw bad("shape", "dimensions ≥ 0", "\(e.shape)") }
        var count = 1
        for d in e.shape {
            let (n, o) = count.multipliedReportingOverflow(by: d)
            if o { throw FormatError.overflow(file: file, tensor: e.name, what: "element count of shape \(e.shape)") }
            count = n
        }
        let (bitCount, o1) = count.multipliedReportingOverflow(by: dtype.traits.bits)
        let (rounded, o2) = bitCount.addingReportingOverflow(7)
        if o1 || o2 {
            throw FormatError.overflow(file: file, tensor: e.name, what: "byte count of \(dtype.name) \(e.shape)")
        }
        let need = rounded / 8
        guard e.length == need else {
            throw bad("length", "\(need) bytes (\(dtype.name) \(e.shape))", "\(e.length) bytes")
        }
        guard e.offset >= 0, e.offset % FileHeader.alignment == 0 else {
            throw bad("offset", "a multiple of \(FileHeader.alignment), ≥ 0", "\(e.offset)")
        }
        try validateQuant(e, dtype, file: file)
        return (dtype, bitCount)
    }

    /// The unused high bits of a packed tensor's last byte must be zero (docs/FORMAT.md section 5), so that equal
    /// models have equal files.
    static func validatePackedTail(_ e: TensorEntry, bits: Int, bytes: UnsafeRawBufferPointer, file: String) throws {
        let unused = e.length &* 8 &- bits
        guard unused > 0, let last = bytes.last else { return }
        guard last >> (8 - unused) == 0 else {
            throw FormatError.badTensor(file: file, tensor: e.name, field: "packed indices",
                                        expected: "zero in the unused high \(unused) bits of the last byte",
                                        actual: "last byte 0x\(String(last, radix: 16, uppercase: true))")
        }
    }

    /// Quantization parameters must match the dtype exactly (docs/FORMAT.md section 5).
    static func validateQuant(_ e: TensorEntry, _ dtype: DType, file: String) throws {
        func bad(_ field: String, _ expected: String, _ actual: String) -> FormatError {
            .badTensor(file: file, tensor: e.name, field: "quant" + (field.isEmpty ? "" : ".") + field,
                       expected: expected, actual: actual)
        }
        guard dtype.traits.isQuantized else {
            if e.quant != nil { throw bad("", "absent for dtype \(dtype.name)", "present") }
            return
        }
        guard let q = e.quant else { throw bad("", "present for dtype \(dtype.name)", "absent") }
        var channels = 1
        if let axis = q.axis {
            guard axis >= 0, axis < e.shape.count else { throw bad("axis", "0..<\(e.shape.count)", "\(axis)") }
            channels = e.shape[axis]
        }
        if dtype == .int8 {
            if q.groupSize != nil { throw bad("groupSize", "absent for int8", "present") }
            if q.lut != nil { throw bad("lut", "absent for int8", "present") }
            guard let scales = q.scales else { throw bad("scales", "\(channels) values", "absent") }
            guard scales.count == channels else { throw bad("scales", "\(channels) values", "\(scales.count)") }
            if let i = scales.firstIndex(where: { !$0.isFinite }) { throw bad("scales[\(i)]", "finite", "\(scales[i])") }
            if let zps = q.zeroPoints {
                guard zps.count == scales.count else { throw bad("zeroPoints", "\(scales.count) values", "\(zps.count)") }
                if let i = zps.firstIndex(where: { $0 < -128 || $0 > 127 }) {
                    throw bad("zeroPoints[\(i)]", "-128...127", "\(zps[i])")
                }
            }
            return
        }
        if let scales = q.scales {
            // Palette with per-channel scales: value = scales[c] × lut[…]; needs an axis, one scale per slice.
            guard q.axis != nil else { throw bad("scales", "absent when there is no axis", "present") }
            guard scales.count == channels else { throw bad("scales", "\(channels) values", "\(scales.count)") }
            if let i = scales.firstIndex(where: { !$0.isFinite }) { throw bad("scales[\(i)]", "finite", "\(scales[i])") }
        }
        if q.zeroPoints != nil { throw bad("zeroPoints", "absent for \(dtype.name)", "present") }
        var groups = 1
        if q.axis != nil {
            let size = q.groupSize ?? 1
            guard size >= 1 else { throw bad("groupSize", "≥ 1", "\(size)") }
            groups = max(1, channels / size + (channels % size == 0 ? 0 : 1))
        } else if q.groupSize != nil {
            throw bad("groupSize", "absent when there is no axis", "present")
        }
        let (entries, o) = groups.multipliedReportingOverflow(by: 1 << dtype.traits.bits)
        if o { throw FormatError.overflow(file: file, tensor: e.name, what: "look-up table size") }
        let want = "\(entries) values (\(groups) groups × \(1 << dtype.traits.bits))"
        guard let lut = q.lut else { throw bad("lut", want, "absent") }
        guard lut.count == entries else { throw bad("lut", want, "\(lut.count)") }
        if let i = lut.firstIndex(where: { !$0.isFinite }) { throw bad("lut[\(i)]", "finite", "\(lut[i])") }
    }

    /// Every name the graph and the metadata use must resolve (docs/FORMAT.md rule 12).
    static func validateReferences(_ m: ModelMetadata, tensorNames: [String: Int], file: String) throws {
        var graphInputs = Set<String>()
        var produced: [String: String] = [:]
        func known(_ name: String) -> Bool {
            graphInputs.contains(name) || produced[name] != nil || tensorNames[name] != nil
        }
        if let g = m.graph {
            guard g.nodes.count <= FileHeader.maxNodes else {
                throw FormatError.capExceeded(file: file, what: "graph nodes", limit: FileHeader.maxNodes,
                                              actual: UInt64(g.nodes.count))
            }
            for input in g.inputs {
                guard !input.name.isEmpty else {
                    throw FormatError.badGraph(file: file, node: "graph", field: "input", reason: "empty name")
                }
                guard graphInputs.insert(input.name).inserted else {
                    throw FormatError.badGraph(file: file, node: "graph", field: "input '\(input.name)'",
                                               reason: "listed twice")
                }
                if let names = input.dimensionNames, names.count != input.shape.count {
                    throw FormatError.badGraph(file: file, node: "graph", field: "input '\(input.name)' dimensionNames",
                                               reason: "\(names.count) names for \(input.shape.count) dimensions")
                }
                if let ranges = input.dimensionRanges,
                   ranges.count != input.shape.count || ranges.contains(where: { $0.count != 2 || $0[0] < 0 || ($0[1] >= 0 && $0[1] < $0[0]) }) {
                    throw FormatError.badGraph(file: file, node: "graph", field: "input '\(input.name)' dimensionRanges",
                                               reason: "expected one [min, max] with 0 ≤ min ≤ max (or max −1) per dimension, found \(ranges)")
                }
                if let shapes = input.enumeratedShapes, shapes.contains(where: { $0.count != input.shape.count }) {
                    throw FormatError.badGraph(file: file, node: "graph", field: "input '\(input.name)' enumeratedShapes",
                                               reason: "a shape of another rank than \(input.shape.count)")
                }
            }
            for n in g.nodes {
                for out in n.outputs {
                    let reason: String? =
                        out.isEmpty ? "empty name"
                        : graphInputs.contains(out) ? "is also a graph input"
                        : tensorNames[out] != nil ? "is also a stored tensor"
                        : produced[out].map { "is also produced by node '\($0)'" }
                    if let reason {
                        throw FormatError.badGraph(file: file, node: "node '\(n.name)'", field: "output '\(out)'",
                                                   reason: reason)
                    }
                    produced[out] = n.name
                }
            }
            for n in g.nodes {
                for input in n.inputs where !known(input) {
                    throw FormatError.badGraph(file: file, node: "node '\(n.name)'", field: "input '\(input)'",
                                               reason: "is not a graph input, a node output or a stored tensor")
                }
            }
            for out in g.outputs where !known(out) {
                throw FormatError.badGraph(file: file, node: "graph", field: "output '\(out)'",
                                           reason: "is not a graph input, a node output or a stored tensor")
            }
        }
        if let f = m.featureTensor, !known(f) {
            throw FormatError.badGraph(file: file, node: "metadata", field: "featureTensor '\(f)'",
                                       reason: "is not a graph input, a node output or a stored tensor")
        }
        if let t = m.text {
            let refs = [("weightsTensor", t.weightsTensor), ("biasTensor", t.biasTensor),
                        ("vocabularyTensor", t.vocabularyTensor), ("idfTensor", t.idfTensor),
                        ("embeddingMeanTensor", t.embeddingMeanTensor), ("embeddingScaleTensor", t.embeddingScaleTensor)]
            for case let (field, name?) in refs where tensorNames[name] == nil {
                throw FormatError.badGraph(file: file, node: "text", field: field,
                                           reason: "no stored tensor named '\(name)'")
            }
            if (t.embeddingMeanTensor == nil) != (t.embeddingScaleTensor == nil) {
                throw FormatError.badGraph(file: file, node: "text", field: "embeddingScaleTensor",
                                           reason: "embeddingMeanTensor and embeddingScaleTensor go together")
            }
            if t.embeddingMeanTensor != nil, m.sentenceEncoder == nil || m.graph == nil {
                throw FormatError.badGraph(file: file, node: "text", field: "embeddingMeanTensor",
                                           reason: "sentence-embedding features without a sentenceEncoder and its graph")
            }
        }
    }

    /// Rule 14: a detector's decoder and NMS settings, and the letterbox preprocessing.
    static func validateDetection(_ m: ModelMetadata, file: String) throws {
        func bad(_ field: String, _ expected: String, _ actual: String) -> FormatError {
            .badDetection(file: file, field: field, expected: expected, actual: actual)
        }
        if m.task == .objectDetector {
            guard m.graph != nil else { throw bad("graph", "present for task objectDetector", "absent") }
            guard m.detection != nil else { throw bad("detection", "present for task objectDetector", "absent") }
        } else if m.detection != nil {
            throw bad("detection", "absent for task \(m.task.rawValue)", "present")
        }
        if let d = m.detection, let p = d.problem(outputs: m.graph?.outputs ?? [], labels: m.labels) {
            throw bad(p.field, p.expected, p.actual)
        }
        if let i = m.image, i.resize == "letterbox" {
            guard i.crop == "none" else { throw bad("image.crop", "none with resize letterbox", "'\(i.crop)'") }
            if let v = i.padValue, !(v >= 0 && v <= 255) { throw bad("image.padValue", "0…255", "\(v)") }
        }
    }
}
