import CMLToolKernels
import MLToolCore

/// A step's weights: checked, loaded, and packed for the kernels that read them (GEMM panels, Winograd, int8,
/// palette indices), or only checked when validating.
extension Program {
    /// The weight tensor `index` of the node, checked to be a model tensor of rank `rank`.
    func weightTensor(_ node: Node, _ index: Int, rank: Int, _ tensors: [String: StoredTensor]) throws -> StoredTensor {
        let name = node.inputs[index]
        guard let t = tensors[name], ids[name].map({ constants[$0] != nil }) ?? true else {
            throw EngineError.badWeights(node: node.name, tensor: name, reason: "must be a model tensor")
        }
        guard t.shape.count == rank, t.shape.allSatisfy({ $0 > 0 }) else {
            throw EngineError.badWeights(node: node.name, tensor: name, reason: "shape \(t.shape), expected rank \(rank)")
        }
        return t
    }

    func weight(_ node: Node, _ index: Int, rank: Int, _ tensors: [String: StoredTensor]) throws -> (Buffer, [Int]) {
        let t = try weightTensor(node, index, rank: rank, tensors)
        return (Buffer(try load(t, node)), t.shape)
    }

    /// A conv or dense weight (k, n): int8-packed when `quantized` takes it, else loaded (and packed for a GEMM
    /// when `gemm`); nothing is read when only validating.
    func gemmWeight(_ s: inout Step, _ t: StoredTensor, _ node: Node, k: Int, n: Int, gemm: Bool) throws {
        if purpose == .validate { return }
        if gemm, let q = quantized(t, k: k, n: n, readsCodes: codeReaders.contains(node.name)),
           q.takesEightBitCodes || !dynamicReaders.contains(node.name) {
            s.qweights = q
            t.bytes.releasePages()
            return
        }
        // Fast mode reads only the packed form: float32 weights are packed straight from their stored
        // (memory-mapped) bytes, with no copy in between.
        // A one-channel 1 → 1 conv is depthwise by shape and runs the depthwise kernel on float weights.
        let depthwiseShaped = t.shape.count == 4 && t.shape[2] == 1 && t.shape[3] == 1
        let packs = gemm && purpose == .fast && !depthwiseShaped
        if packs && !Fast.usesWinograd(s), t.dtype.traits.isPalette, let p = PaletteWeights(t, k: k, n: n) {
            Self.keepPalette(&s, p, bits: t.dtype.traits.bits)
            t.bytes.releasePages()
            return
        }
        if packs, let stored = Self.storedFloats(t, count: k &* n) {
            Self.packForFast(&s, stored, k: k, n: n)
            t.bytes.releasePages()   // packed: the file's pages are not read again
            return
        }
        let w = Buffer(try load(t, node))
        if gemm && purpose == .fast {
            Self.packForFast(&s, w.pointer, k: k, n: n)
            // Fast mode reads only the packed form: the dequantized floats (palettes, float16) are dropped once
            // packed, as float32 weights are never copied. A one-channel conv (depthwise by shape) keeps them.
            if !depthwiseShaped { return }
        }
        s.weight = w
    }

    /// Palettes stay as their indices (decoded per run: `PaletteWeights`) where the CPU decodes them quickly,
    /// except Winograd's transformed weights. Elsewhere they are decoded once, straight into the GEMM's
    /// panels (the same floats as their dequantization): a dequantized copy packed and freed left the heap
    /// with holes, 6-bit EfficientNet-Lite0 forced to AVX2 peaking at 125% of float's memory.
    private static func keepPalette(_ s: inout Step, _ p: PaletteWeights, bits: Int) {
        if PaletteWeights.keepsIndices(bits: bits) {
            s.palette = p   // with a copy of the indices
        } else {
            let packed = Buffer(uninitialized: p.packedCount)
            p.unpack(panels: 0, p.panels, into: packed.pointer)
            s.packed = packed
        }
    }

    /// The GEMM's packed weights, or a stride-1 3×3 conv's Winograd-transformed ones.
    private static func packForFast(_ s: inout Step, _ w: UnsafePointer<Float>, k: Int, n: Int) {
        if Fast.usesWinograd(s) {
            let c = s.weightShape[2]
            let tmp = Buffer(uninitialized: c &* n)
            let u = Buffer(uninitialized: Int(mlk_winograd_packed_count(Int64(c), Int64(n))))
            mlk_winograd_pack(w, Int64(c), Int64(n), tmp.pointer, u.pointer)
            s.winograd = u
        } else {
            s.packed = Self.pack(w, k: k, n: n)
        }
    }

    /// `t` packed for the int8 kernels, when int8 compute is on, `t` is big enough and stored in a form they take.
    /// int8 weights as they are stored, and palettes with int8 tables as their exact int8 values (4- and 6-bit ones
    /// kept as indices where the CPU decodes them quickly); other palettes (`.all` only) rounded per column to int8
    /// (`QuantizedWeights(floats:)`).
    func quantized(_ t: StoredTensor, k: Int, n: Int, readsCodes: Bool = false) -> QuantizedWeights? {
        guard purpose == .fast, let minimum = int8Minimum else { return nil }
        if k &* n < minimum.weights || k < minimum.k {
            // A QDQ file's small layer too (`codeReaders`), where its sums of 8-bit codes stay exact.
            guard readsCodes, t.dtype == .int8, let q = QuantizedWeights(t, k: k, n: n), q.takesEightBitCodes else { return nil }
            return q
        }
        if t.dtype == .int8 { return QuantizedWeights(t, k: k, n: n) }
        if t.dtype.traits.isPalette, let exact = QuantizedWeights(int8Table: t, k: k, n: n, keepIndices: true) { return exact }
        guard minimum.palettes, t.dtype.traits.isPalette, let floats = try? t.floats() else { return nil }
        return floats.withUnsafeBufferPointer { QuantizedWeights(floats: $0, k: k, n: n) }
    }

    /// w (k, n) packed into 16-column panels for `mlk_gemm_packed` (which writes every element, padding included).
    static func pack(_ w: UnsafePointer<Float>, k: Int, n: Int) -> Buffer {
        let packed = Buffer(uninitialized: Int(mlk_packed_count(Int64(k), Int64(n))))
        mlk_pack(w, Int64(k), Int64(n), packed.pointer)
        return packed
    }

    /// `t`'s `count` float32 values read in place from its stored bytes; nil when it is stored in another form, its
    /// bytes are short or misaligned (then it is loaded, which reports what is wrong).
    static func storedFloats(_ t: StoredTensor, count expected: Int) -> UnsafePointer<Float>? {
        guard t.dtype == .f32, let count = try? Checked.elementCount(t.shape), count == expected,
              case let (bytes, overflow) = count.multipliedReportingOverflow(by: 4), !overflow, t.bytes.count >= bytes,
              let base = t.bytes.buffer.baseAddress, Int(bitPattern: base) % MemoryLayout<Float>.alignment == 0
        else { return nil }
        return UnsafePointer(base.assumingMemoryBound(to: Float.self))
    }

    func bias(_ node: Node, _ i: Int, count: Int, _ tensors: [String: StoredTensor]) throws -> Buffer {
        guard let t = tensors[node.inputs[i]] else {
            throw EngineError.badWeights(node: node.name, tensor: node.inputs[i], reason: "must be a model tensor")
        }
        let v = try load(t, node)
        guard v.count == count else {
            throw EngineError.badWeights(node: node.name, tensor: t.name, reason: "\(v.count) values, expected \(count)")
        }
        return Buffer(v)
    }

}
