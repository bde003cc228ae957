import Foundation
import MLToolCore
import MLToolEngine
@testable import MLToolImport

/// Paths and helpers shared by the ONNX tests.
enum ONNXFixtures {
    /// Tests/Fixtures/onnx, found from this source file (no Python or network at test time).
    static let directory: String = {
        let here = URL(fileURLWithPath: #filePath)
        return here.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures/onnx").path
    }()

    static func path(_ name: String) -> String { (directory as NSString).appendingPathComponent(name) }

    struct TensorFile: Decodable { let name: String; let shape: [Int]; let file: String }
    struct Case: Decodable { let model: String; let inputs: [TensorFile]; let outputs: [TensorFile] }

    static func manifest() throws -> [Case] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path("manifest.json")))
        return try JSONDecoder().decode([Case].self, from: data)
    }

    /// The raw little-endian float32 file of `t`, in Tests/Fixtures/onnx or its subdirectory `under`.
    static func load(_ t: TensorFile, under: String? = nil) throws -> Tensor {
        let data = try Data(contentsOf: URL(fileURLWithPath: path(under.map { $0 + "/" + t.file } ?? t.file)))
        let floats = data.withUnsafeBytes { raw in
            (0..<(raw.count / 4)).map { Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self))) }
        }
        return Tensor(shape: t.shape, data: floats)
    }

    /// NCHW → NHWC (rank-4 only; other ranks unchanged).
    static func toNHWC(_ t: Tensor) -> Tensor { t.rank == 4 ? permute(t, [0, 2, 3, 1]) : t }
    /// NHWC → NCHW.
    static func toNCHW(_ t: Tensor) -> Tensor { t.rank == 4 ? permute(t, [0, 3, 1, 2]) : t }

    static func permute(_ t: Tensor, _ perm: [Int]) -> Tensor {
        let shape = perm.map { t.shape[$0] }
        var strides = [Int](repeating: 1, count: t.rank)
        for i in stride(from: t.rank - 2, through: 0, by: -1) { strides[i] = strides[i + 1] * t.shape[i + 1] }
        var out = [Float](repeating: 0, count: t.count)
        var idx = [Int](repeating: 0, count: t.rank)
        for o in 0..<t.count {
            var src = 0
            for a in 0..<t.rank { src += idx[a] * strides[perm[a]] }
            out[o] = t.data[src]
            var a = t.rank - 1
            while a >= 0 { idx[a] += 1; if idx[a] < shape[a] { break }; idx[a] = 0; a -= 1 }
        }
        return Tensor(shape: shape, data: out)
    }
}
