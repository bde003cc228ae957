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
        _ = m.initializeMemory(as: UInt8.self, from: bytes)
        self.allocated = m
        self.buffer = UnsafeRawBufferPointer(rebasing: m[0..<bytes.count])
        self.owner = nil
    }

    /// Copies the raw bytes of `floats` (little-endian f32, which is the host order on every supported machine).
    public convenience init(floats: [Float]) {
        self.init(copying: floats.withUnsafeBytes { Array($0) })
    }

    deinit { allocated?.deallocate() }

    public var count: Int { buffer.count }
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

    public init(axis: Int? = nil, scales: [Float]? = nil, zeroPoints: [Int]? = nil, groupSize: Int? = nil,
                lut: [Float]? = nil) {
        self.axis = axis; self.scales = scales; self.zeroPoints = zeroPoints; self.groupSize = groupSize; self.lut = lut
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
