import Foundation

/// Bytes of a stored tensor: either owned, or a view into a memory-mapped file kept alive by `owner`.
public final class TensorBytes: @unchecked Sendable {
    public let buffer: UnsafeRawBufferPointer
    private let owner: AnyObject?
    private let allocated: UnsafeMutableRawBufferPointer?

    /// A view into memory that `owner` keeps alive (e.g. a mapped file).
    public init(view: UnsafeRawBufferPointer, owner: AnyObject) {
        self.buffer = view
        self.owner = owner
        self.allocated = nil
    }

    /// Copies `bytes` into memory this object owns (64-byte aligned).
    public init<C: Collection>(copying bytes: C) where C.Element == UInt8 {
        let m = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 64)
        // One memcpy for contiguous collections (the element-wise copy ran at ~100 instructions per byte).
        let copied: Bool? = bytes.withContiguousStorageIfAvailable { src in
            if let base = src.baseAddress { m.baseAddress!.copyMemory(from: base, byteCount: src.count) }
            return true
        }
        if copied == nil { _ = m.initializeMemory(as: UInt8.self, from: bytes) }
        self.allocated = m
        self.buffer = UnsafeRawBufferPointer(rebasing: m[0..<bytes.count])
        self.owner = nil
    }

    /// Copies the raw bytes of `floats` (little-endian f32, which is the host order on every supported machine).
    public init(floats: [Float]) {
        let count = floats.count * MemoryLayout<Float>.size
        let m = UnsafeMutableRawBufferPointer.allocate(byteCount: max(count, 1), alignment: 64)
        floats.withUnsafeBytes { src in if let base = src.baseAddress { m.baseAddress!.copyMemory(from: base, byteCount: count) } }
        self.allocated = m
        self.buffer = UnsafeRawBufferPointer(rebasing: m[0..<count])
        self.owner = nil
    }

    deinit { allocated?.deallocate() }

    public var count: Int { buffer.count }

    /// Hands the whole memory pages of a view into a file mapping back to the kernel: the bytes stay the same and
    /// readable (read from the file again when next touched); nothing for owned bytes. For a reader that has copied
    /// or packed what it needs (a float model's mapped weights were otherwise a second copy in resident memory).
    public func releasePages() { (owner as? PageReleasing)?.releasePages(buffer) }
}

/// Memory that can give its resident pages back without changing what it holds: a read-only file mapping.
public protocol PageReleasing: AnyObject {
    /// Releases the whole pages inside `range`, a part of this object's memory; anything outside it is ignored.
    func releasePages(_ range: UnsafeRawBufferPointer)
}

/// Parameters of a quantized tensor. Linear int8: real = scales[c] * (q - zeroPoints[c]) where c is the index along
/// `axis` (or 0 when `axis` is nil). Palette: index i of group g maps to lut[g * 2^bits + i]; groups are runs of
/// `groupSize` consecutive slices along `axis` (one group for the whole tensor when `axis` is nil); optional `scales`
/// (one per slice along `axis`) multiply the table value: real = scales[c] * lut[…].
public struct QuantParams: Codable, Equatable, Sendable {
    public var axis: Int?
    public var scales: [Float]?
    public var zeroPoints: [Int]?
    public var groupSize: Int?
    public var lut: [Float]?
    /// How `scales` is stored: nil = binary32; "bf16" = bfloat16 (the top half of a binary32), half the bytes.
    /// Every scale must then be exactly a bfloat16 value (`bfloat16Rounded`); quantizers round before use.
    public var scalesType: String?

    public init(axis: Int? = nil, scales: [Float]? = nil, zeroPoints: [Int]? = nil, groupSize: Int? = nil,
                lut: [Float]? = nil, scalesType: String? = nil) {
        self.axis = axis; self.scales = scales; self.zeroPoints = zeroPoints; self.groupSize = groupSize; self.lut = lut
        self.scalesType = scalesType
    }

    enum CodingKeys: String, CodingKey { case axis, scales, zeroPoints, groupSize, lut, scalesType }

    // `scales` and `lut` are stored as base64 of little-endian binary32 values: exact, and a third of the size of
    // decimal text (a per-channel int8 EfficientNet carries ~21,000 scales). With `scalesType` "bf16", `scales`
    // holds little-endian bfloat16 values instead: half again.
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        axis = try c.decodeIfPresent(Int.self, forKey: .axis)
        zeroPoints = try c.decodeIfPresent([Int].self, forKey: .zeroPoints)
        groupSize = try c.decodeIfPresent(Int.self, forKey: .groupSize)
        scalesType = try c.decodeIfPresent(String.self, forKey: .scalesType)
        switch scalesType {
        case nil: scales = try Self.decodeFloats(c, .scales)
        case "bf16"?: scales = try Self.decodeBFloat16(c, .scales)
        case let other?:
            throw DecodingError.dataCorruptedError(forKey: .scalesType, in: c,
                                                   debugDescription: "unknown scalesType '\(other)' (expected \"bf16\" or absent)")
        }
        lut = try Self.decodeFloats(c, .lut)
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(axis, forKey: .axis)
        try c.encodeIfPresent(zeroPoints, forKey: .zeroPoints)
        try c.encodeIfPresent(groupSize, forKey: .groupSize)
        try c.encodeIfPresent(scalesType, forKey: .scalesType)
        if scalesType == "bf16", let s = scales {
            guard s.allSatisfy({ $0.bitPattern & 0xFFFF == 0 }) else {
                throw EncodingError.invalidValue(s, .init(codingPath: c.codingPath + [CodingKeys.scales],
                                                          debugDescription: "scalesType bf16 needs bfloat16-exact scales"))
            }
            let halves = s.map { UInt16(truncatingIfNeeded: $0.bitPattern >> 16).littleEndian }
            try c.encode(halves.withUnsafeBytes { Data($0) }.base64EncodedString(), forKey: .scales)
        } else {
            try c.encodeIfPresent(scales.map(Self.base64), forKey: .scales)
        }
        try c.encodeIfPresent(lut.map(Self.base64), forKey: .lut)
    }

    /// The bfloat16 value nearest to `x` (ties to even), as a Float; finite values that overflow become the
    /// largest finite bfloat16 of the same sign.
    public static func bfloat16Rounded(_ x: Float) -> Float {
        guard x.isFinite else { return x }
        let b = x.bitPattern
        let rounded = b &+ 0x7FFF &+ ((b >> 16) & 1)
        let r = Float(bitPattern: rounded & 0xFFFF_0000)
        return r.isFinite ? r : Float(bitPattern: (b & 0x8000_0000) | 0x7F7F_0000)
    }

    static func decodeBFloat16(_ c: KeyedDecodingContainer<CodingKeys>, _ key: CodingKeys) throws -> [Float]? {
        guard let text = try c.decodeIfPresent(String.self, forKey: key) else { return nil }
        guard let data = Data(base64Encoded: text), data.count % 2 == 0 else {
            throw DecodingError.dataCorruptedError(forKey: key, in: c,
                                                   debugDescription: "not base64 of little-endian bfloat16 values")
        }
        return data.withUnsafeBytes { raw in
            (0..<(data.count / 2)).map {
                Float(bitPattern: UInt32(UInt16(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 2, as: UInt16.self))) << 16)
            }
        }
    }

    static func base64(_ v: [Float]) -> String {
        v.map { $0.bitPattern.littleEndian }.withUnsafeBytes { Data($0) }.base64EncodedString()
    }

    static func decodeFloats(_ c: KeyedDecodingContainer<CodingKeys>, _ key: CodingKeys) throws -> [Float]? {
        guard let text = try c.decodeIfPresent(String.self, forKey: key) else { return nil }
        guard let data = Data(base64Encoded: text), data.count % 4 == 0 else {
            throw DecodingError.dataCorruptedError(forKey: key, in: c,
                                                   debugDescription: "not base64 of little-endian binary32 values")
        }
        return data.withUnsafeBytes { raw in
            (0..<(data.count / 4)).map { Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self))) }
        }
    }
}

/// A named tensor as it is stored in a model file: dtype, shape, optional quantization parameters, and its bytes.
public struct StoredTensor: @unchecked Sendable {
    public var name: String
    public var dtype: DType
    public var shape: [Int]
    public var quant: QuantParams?
    public var bytes: TensorBytes

    public init(name: String, dtype: DType, shape: [Int], quant: QuantParams? = nil, bytes: TensorBytes) {
        self.name = name; self.dtype = dtype; self.shape = shape; self.quant = quant; self.bytes = bytes
    }

    /// A float32 tensor that owns a copy of `tensor`'s values.
    public init(name: String, tensor: Tensor) {
        self.init(name: name, dtype: .f32, shape: tensor.shape, bytes: TensorBytes(floats: tensor.data))
    }

    public var elementCount: Int { shape.reduce(1, *) }
}
