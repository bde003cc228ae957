/// Element types of stored tensors. Raw values are written to files: never reuse a removed one.
public enum DType: UInt8, CaseIterable, Codable, Sendable {
    case f32 = 1
    case f16 = 2
    /// Linear int8: real = scale[c] * (q - zeroPoint[c]), per tensor or per channel along `QuantParams.axis`.
    case int8 = 3
    /// Palettized: packed k-bit indices into a look-up table of 2^k floats (per tensor or per group).
    case palette1 = 4
    case palette2 = 5
    case palette4 = 6
    case palette6 = 7
    case palette8 = 8
    /// Raw bytes (vocabularies, blobs); shape is the byte count.
    case u8 = 9
    case i32 = 10
    case i64 = 11

    /// The one traits table: everything else about a dtype is looked up here.
    public var traits: DTypeTraits { DTypeTraits.table[Int(rawValue)] }
    public var name: String { traits.name }

    public init?(name: String) {
        guard let t = DTypeTraits.table.first(where: { $0.name == name }), let d = t.dtype else { return nil }
        self = d
    }
}

public struct DTypeTraits: Sendable {
    public let dtype: DType?
    public let name: String
    /// Bits per stored element (indices for palettes).
    public let bits: Int
    public let isQuantized: Bool
    public let isPalette: Bool
    public let isFloat: Bool

    /// Indexed by raw value; index 0 is unused.
    public static let table: [DTypeTraits] = [
        DTypeTraits(dtype: nil, name: "invalid", bits: 0, isQuantized: false, isPalette: false, isFloat: false),
        DTypeTraits(dtype: .f32, name: "f32", bits: 32, isQuantized: false, isPalette: false, isFloat: true),
        DTypeTraits(dtype: .f16, name: "f16", bits: 16, isQuantized: false, isPalette: false, isFloat: true),
        DTypeTraits(dtype: .int8, name: "int8", bits: 8, isQuantized: true, isPalette: false, isFloat: false),
        DTypeTraits(dtype: .palette1, name: "palette1", bits: 1, isQuantized: true, isPalette: true, isFloat: false),
        DTypeTraits(dtype: .palette2, name: "palette2", bits: 2, isQuantized: true, isPalette: true, isFloat: false),
        DTypeTraits(dtype: .palette4, name: "palette4", bits: 4, isQuantized: true, isPalette: true, isFloat: false),
        DTypeTraits(dtype: .palette6, name: "palette6", bits: 6, isQuantized: true, isPalette: true, isFloat: false),
        DTypeTraits(dtype: .palette8, name: "palette8", bits: 8, isQuantized: true, isPalette: true, isFloat: false),
        DTypeTraits(dtype: .u8, name: "u8", bits: 8, isQuantized: false, isPalette: false, isFloat: false),
        DTypeTraits(dtype: .i32, name: "i32", bits: 32, isQuantized: false, isPalette: false, isFloat: false),
        DTypeTraits(dtype: .i64, name: "i64", bits: 64, isQuantized: false, isPalette: false, isFloat: false),
    ]

    /// Bytes needed for `count` elements (packed, rounded up to whole bytes), overflow-checked.
    public func byteCount(elements count: Int) throws -> Int {
        let bitsTotal = try Checked.mul(count, bits, what: "tensor bytes")
        return try Checked.add(bitsTotal, 7, what: "tensor bytes") / 8
    }
}
