import Foundation
import MLToolCore

/// NumPy `.npy` (format 1.0–3.0), as `mltool run` reads and writes tensors: little-endian float32 (`<f4`); float64,
/// float16, the integers and bool read and converted (`dtypes`); C or Fortran order. Bounds-checked: a malformed header throws naming the file and the byte offset.
public enum NPY {
    public static func read(path: String) throws -> Tensor { try readTyped(path: path).tensor }

    /// The tensor and its `descr` as the file gives it ("<f4", "<i8", "|b1", …).
    public static func readTyped(path: String) throws -> (tensor: Tensor, dtype: String) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw PipelineError.missingInput(file: path, reason: "no such file or not readable")
        }
        let bytes = [UInt8](data)
        return try bytes.withUnsafeBytes { raw -> (tensor: Tensor, dtype: String) in
            var r = ByteReader(raw, file: path)
            let magic = try r.bytes(6, "magic")
            guard Array(magic) == [0x93] + Array("NUMPY".utf8) else {
                throw PipelineError.badInput(file: path, reason: "byte 0: not a .npy file (bad magic)")
            }
            let major = try r.u8("version")
            _ = try r.u8("version")
            let headerLength: Int
            if major == 1 {
                let lo = Int(try r.u8("header length")), hi = Int(try r.u8("header length"))
                headerLength = lo | hi << 8
            } else if major == 2 || major == 3 {
                headerLength = Int(try r.u32("header length"))
            } else {
                throw PipelineError.badInput(file: path, reason: "byte 6: .npy version \(major) is not supported")
            }
            let headerStart = r.offset
            let header = String(decoding: try r.bytes(headerLength, "header"), as: UTF8.self)
            guard let descr = field(header, "descr"), let shapeText = field(header, "shape") else {
                throw PipelineError.badInput(file: path, reason: "byte \(headerStart): header lacks 'descr' or 'shape'")
            }
            let fortran = field(header, "fortran_order")?.hasPrefix("True") == true
            let dims = shapeText.split(whereSeparator: { !"0123456789".contains($0) }).compactMap { Int($0) }
            let count = try Checked.elementCount(dims, file: path, what: "shape")
            // Every product of the dimensions must fit too, zeros counted as 1: an empty array cannot hide a huge one.
            _ = try Checked.elementCount(dims.map { max($0, 1) }, file: path, what: "shape")
            let dtype = descr.trimmingCharacters(in: CharacterSet(charactersIn: "'"))
            guard let (width, load) = dtypes[dtype] else {
                throw PipelineError.badInput(file: path, reason: "byte \(headerStart): dtype \(descr) is not supported (use float32)")
            }
            let payload = try r.bytes(try Checked.mul(count, width, file: path), "data")
            let out = (0..<count).map { load(payload, $0 &* width) }
            // Fortran order: the first index varies fastest, so the bytes are the transpose's in C order.
            guard fortran, dims.count > 1 else { return (Tensor(shape: dims, data: out), dtype) }
            return (Layout.transpose(Tensor(shape: dims.reversed(), data: out), Array((0..<dims.count).reversed())), dtype)
        }
    }

    /// The element types read, by `descr`: their width in bytes and the float32 value of the element at a byte offset
    /// (integers and bools as their values, exact below 2^24).
    private static let dtypes: [String: (Int, @Sendable (UnsafeRawBufferPointer, Int) -> Float)] = [
        "<f4": (4, { $0.loadUnaligned(fromByteOffset: $1, as: Float.self) }),
        "|f4": (4, { $0.loadUnaligned(fromByteOffset: $1, as: Float.self) }),
        "<f8": (8, { Float($0.loadUnaligned(fromByteOffset: $1, as: Double.self)) }),
        "<f2": (2, { Float(Float16(bitPattern: $0.loadUnaligned(fromByteOffset: $1, as: UInt16.self))) }),
        "<i8": (8, { Float($0.loadUnaligned(fromByteOffset: $1, as: Int64.self)) }),
        "<i4": (4, { Float($0.loadUnaligned(fromByteOffset: $1, as: Int32.self)) }),
        "<i2": (2, { Float($0.loadUnaligned(fromByteOffset: $1, as: Int16.self)) }),
        "<u2": (2, { Float($0.loadUnaligned(fromByteOffset: $1, as: UInt16.self)) }),
        "|i1": (1, { Float($0.loadUnaligned(fromByteOffset: $1, as: Int8.self)) }),
        "|u1": (1, { Float($0.loadUnaligned(fromByteOffset: $1, as: UInt8.self)) }),
        "|b1": (1, { $0.loadUnaligned(fromByteOffset: $1, as: UInt8.self) == 0 ? 0 : 1 }),
    ]

    /// The value text of `'key': value` in a .npy header dict.
    private static func field(_ header: String, _ key: String) -> String? {
        guard let r = header.range(of: "'\(key)':") else { return nil }
        var rest = header[r.upperBound...].drop(while: { $0 == " " })
        if rest.first == "(" {
            guard let close = rest.firstIndex(of: ")") else { return nil }
            rest = rest[...close]
            return String(rest)
        }
        return String(rest.prefix(while: { $0 != "," && $0 != "}" })).trimmingCharacters(in: .whitespaces)
    }

    public static func encode(_ t: Tensor) -> [UInt8] {
        let shape = t.shape.count == 1 ? "(\(t.shape[0]),)" : "(" + t.shape.map(String.init).joined(separator: ", ") + ")"
        var header = "{'descr': '<f4', 'fortran_order': False, 'shape': \(shape), }"
        while (10 + header.utf8.count + 1) % 64 != 0 { header += " " }
        header += "\n"
        var out: [UInt8] = [0x93] + Array("NUMPY".utf8) + [1, 0]
        let n = header.utf8.count
        out += [UInt8(n & 0xff), UInt8(n >> 8)]
        out += Array(header.utf8)
        t.data.withUnsafeBytes { out += $0 }
        return out
    }
}

/// Axis permutations for tensors read from or written to other frameworks (NCHW ↔ the IR's NHWC).
public enum Layout {
    /// A copy of `t` with its axes permuted (`out.shape[i] = t.shape[perm[i]]`).
    public static func transpose(_ t: Tensor, _ perm: [Int]) -> Tensor {
        let shape = perm.map { t.shape[$0] }
        // Without elements there is nothing to move (and the strides of a shape with a zero dimension need not fit).
        if t.count == 0 { return Tensor(shape: shape, data: []) }
        var inStrides = [Int](repeating: 1, count: t.rank)
        for i in stride(from: t.rank - 2, through: 0, by: -1) { inStrides[i] = inStrides[i + 1] * t.shape[i + 1] }
        var out = [Float](repeating: 0, count: t.count)
        var idx = [Int](repeating: 0, count: t.rank)
        for o in 0..<t.count {
            var src = 0
            for a in 0..<t.rank { src += idx[a] * inStrides[perm[a]] }
            out[o] = t.data[src]
            var a = t.rank - 1
            while a >= 0 { idx[a] += 1; if idx[a] < shape[a] { break }; idx[a] = 0; a -= 1 }
        }
        return Tensor(shape: shape, data: out)
    }
}
