import Foundation
import MLToolCore
@testable import MLToolFormat

/// Models and file surgery shared by the format tests.
enum TestModels {
    /// A small classifier: x (1,4) → dense(fc.w f32 (4,3), fc.b f32 (3)) → y, plus an int8 per-channel tensor.
    static func small() -> Model {
        let graph = Graph(inputs: [GraphInput(name: "x", shape: [-1, 4])], outputs: ["y"],
                          nodes: [Node(name: "fc", op: .dense, inputs: ["x", "fc.w", "fc.b"], outputs: ["y"],
                                       attributes: Attributes(activation: .relu))])
        var meta = ModelMetadata(task: .network, graph: graph, labels: ["a", "b", "c"],
                                 provenance: Provenance(toolVersion: "test", seed: 7))
        meta.metrics = ["holdout.accuracy": 0.75]
        let w = StoredTensor(name: "fc.w", tensor: Tensor(shape: [4, 3], data: (0..<12).map { Float($0) * 0.5 }))
        let b = StoredTensor(name: "fc.b", tensor: Tensor(shape: [3], data: [1, -1, 0.25]))
        let q = StoredTensor(name: "q", dtype: .int8, shape: [2, 3],
                             quant: QuantParams(axis: 0, scales: [0.5, 0.25], zeroPoints: [0, -3]),
                             bytes: TensorBytes(copying: [1, 2, 3, 0xFF, 0x80, 0x7F] as [UInt8]))
        return Model(metadata: meta, tensors: [w, b, q])
    }

    /// Per-channel int8 and a palette with per-channel scales, both with scales stored as bfloat16.
    static func compactScales() -> Model {
        let scales: [Float] = [0.5, 0.0078125, 3.0e-9, 1.5e12].map(QuantParams.bfloat16Rounded)
        let q = StoredTensor(name: "q", dtype: .int8, shape: [2, 4],
                             quant: QuantParams(axis: 1, scales: scales, scalesType: "bf16"),
                             bytes: TensorBytes(copying: [1, 2, 3, 0xFF, 0x80, 0x7F, 0, 9] as [UInt8]))
        let p = StoredTensor(name: "p", dtype: .palette2, shape: [4, 3],
                             quant: QuantParams(axis: 0, scales: scales, groupSize: 4, lut: [-1, -0.25, 0.5, 1],
                                                scalesType: "bf16"),
                             bytes: TensorBytes(copying: PackedBits.pack([0, 1, 2, 3, 3, 2, 1, 0, 0, 3, 1, 2], bits: 2)))
        return Model(metadata: ModelMetadata(task: .network, provenance: Provenance(toolVersion: "test")), tensors: [q, p])
    }

    /// The smallest model with one tensor (the example of docs/FORMAT.md section 11).
    static func tiny() -> Model {
        Model(metadata: ModelMetadata(task: .network, provenance: Provenance(toolVersion: "0.1.0")),
              tensors: [StoredTensor(name: "w", tensor: Tensor(shape: [2], data: [1, 2]))])
    }

    /// A seeded random model with tensors of every dtype and every quantization flavour, and random metadata.
    static func random(seed: UInt64) -> Model {
        var rng = SplitMix64(seed: seed)
        func int(_ range: ClosedRange<Int>) -> Int { range.lowerBound + Int(rng.next() % UInt64(range.count)) }
        func bytes(_ n: Int) -> [UInt8] { (0..<n).map { _ in UInt8(truncatingIfNeeded: rng.next()) } }
        func finite() -> Float {
            while true {
                let f = Float(bitPattern: UInt32(truncatingIfNeeded: rng.next()))
                if f.isFinite { return f }
            }
        }
        func shape(minRank: Int = 0) -> [Int] {
            // Mostly small dims; sometimes a zero dimension.
            (0..<int(minRank...4)).map { _ in int(0...9) == 0 ? 0 : int(1...5) }
        }
        var tensors: [StoredTensor] = []
        func add(_ dtype: DType, _ s: [Int], _ quant: QuantParams? = nil, raw: [UInt8]? = nil) {
            let n = s.reduce(1, *)
            let data = raw ?? bytes((n * dtype.traits.bits + 7) / 8)
            tensors.append(StoredTensor(name: "t\(tensors.count).\(dtype.name)", dtype: dtype, shape: s, quant: quant,
                                        bytes: TensorBytes(copying: data)))
        }
        for dtype in [DType.f32, .f16, .u8, .i32, .i64] { add(dtype, shape()) }
        // int8 per tensor and per channel.
        add(.int8, shape(), QuantParams(scales: [finite()], zeroPoints: int(0...1) == 0 ? nil : [int(-128...127)]))
        let cs = shape(minRank: 1), axis = int(0...(cs.count - 1))
        add(.int8, cs, QuantParams(axis: axis, scales: (0..<cs[axis]).map { _ in finite() },
                                   zeroPoints: (0..<cs[axis]).map { _ in int(-128...127) }))
        // Palettes, per tensor and grouped along an axis.
        for dtype in [DType.palette1, .palette2, .palette4, .palette6, .palette8] {
            let k = dtype.traits.bits
            let s1 = shape()
            add(dtype, s1, QuantParams(lut: (0..<(1 << k)).map { _ in finite() }),
                raw: PackedBits.pack((0..<s1.reduce(1, *)).map { _ in int(0...((1 << k) - 1)) }, bits: k))
            let s2 = shape(minRank: 1), ax = int(0...(s2.count - 1)), group = int(1...3)
            let groups = max(1, (s2[ax] + group - 1) / group)
            add(dtype, s2, QuantParams(axis: ax, groupSize: group, lut: (0..<(groups << k)).map { _ in finite() }),
                raw: PackedBits.pack((0..<s2.reduce(1, *)).map { _ in int(0...((1 << k) - 1)) }, bits: k))
        }
        // Shuffle the order: the file must keep whatever order the model has.
        for i in stride(from: tensors.count - 1, to: 0, by: -1) { tensors.swapAt(i, int(0...i)) }

        let names = tensors.map(\.name)
        var nodes: [Node] = []
        var produced = ["input"]
        for i in 0..<int(1...5) {
            let ins = [produced[int(0...(produced.count - 1))], names[int(0...(names.count - 1))]]
            nodes.append(Node(name: "n\(i)", op: Op.allCases[int(0...(Op.allCases.count - 1))], inputs: ins,
                              outputs: ["v\(i)"],
                              attributes: Attributes(strides: [int(1...2), int(1...2)], alpha: finite(), epsilon: 1e-5)))
            produced.append("v\(i)")
        }
        let graph = Graph(inputs: [GraphInput(name: "input", shape: [-1, int(1...224), int(1...224), 3])],
                          outputs: [produced.last!], nodes: nodes, sourceLayout: int(0...1) == 0 ? "nchw" : "nhwc")
        var meta = ModelMetadata(task: .imageClassifier, graph: graph, labels: (0..<int(0...5)).map { "label \($0) ✓/\"" },
                                 provenance: Provenance(toolVersion: "0.1.0", sources: [.init(path: "/a/b.onnx", sha256: "ab")],
                                                        seed: rng.next(), command: "mltool import x", timings: ["import": 1.5]))
        meta.name = "random \(seed)"
        meta.featureTensor = produced[int(0...(produced.count - 1))]
        meta.metrics = ["a": Double(finite()), "b": .infinity, "c": Double(bitPattern: rng.next() >> 2)]
        meta.image = ImagePreprocessing(height: 224, width: 224, scale: finite(), mean: [finite(), 0, -0.0])
        return Model(metadata: meta, tensors: tensors)
    }

    // MARK: - File surgery (for the corrupt-file corpus)

    /// Recomputes every checksum of `bytes` after a test patched it, so that only the structural damage remains.
    /// Section checksums are recomputed only for sections that lie inside the file.
    static func reseal(_ bytes: [UInt8]) -> [UInt8] {
        var b = bytes
        var h = b.withUnsafeBytes { FileHeader(decoding: $0) }
        func hash(_ offset: UInt64, _ length: UInt64) -> UInt64? {
            let (end, o) = offset.addingReportingOverflow(length)
            guard !o, end <= UInt64(b.count) else { return nil }
            return XXH64.hash(Array(b[Int(offset)..<Int(end)]))
        }
        h.metadataHash = hash(h.metadataOffset, h.metadataLength) ?? h.metadataHash
        h.dataHash = hash(h.dataOffset, h.dataLength) ?? h.dataHash
        b.replaceSubrange(0..<FileHeader.size, with: h.encoded())
        let fileHash = XXH64.hash(Array(b[0..<(b.count - 8)]))
        withUnsafeBytes(of: fileHash.littleEndian) { b.replaceSubrange((b.count - 8)..<b.count, with: $0) }
        return b
    }

    /// Rebuilds `file` with its tensor table changed by `edit` (same data section), all checksums valid.
    static func editTable(_ file: [UInt8], _ edit: (inout MetadataDocument) -> Void) throws -> [UInt8] {
        let h = file.withUnsafeBytes { FileHeader(decoding: $0) }
        let json = Data(file[Int(h.metadataOffset)..<Int(h.metadataOffset + h.metadataLength)])
        var doc = try MetadataDocument.decoder().decode(MetadataDocument.self, from: json)
        edit(&doc)
        let newJSON = [UInt8](try MetadataDocument.encoder().encode(doc))
        let data = file[Int(h.dataOffset)..<Int(h.dataOffset + h.dataLength)]
        return ModelFile.assemble(metadataJSON: newJSON, tensorCount: doc.tensors.count, dataLength: data.count) { out, _ in
            out.append(contentsOf: data)
        }
    }

    /// Sets the little-endian u64 at `offset`.
    static func setU64(_ b: inout [UInt8], _ offset: Int, _ v: UInt64) {
        withUnsafeBytes(of: v.littleEndian) { b.replaceSubrange(offset..<(offset + 8), with: $0) }
    }
}

/// Equality of two models down to the tensor bytes.
func sameModel(_ a: Model, _ b: Model) -> Bool {
    guard a.metadata == b.metadata, a.tensors.count == b.tensors.count else { return false }
    return zip(a.tensors, b.tensors).allSatisfy { x, y in
        x.name == y.name && x.dtype == y.dtype && x.shape == y.shape && x.quant == y.quant
            && x.bytes.buffer.elementsEqual(y.bytes.buffer)
    }
}
