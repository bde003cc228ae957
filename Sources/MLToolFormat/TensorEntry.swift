import Foundation
import MLToolCore

/// One row of the tensor table in the metadata JSON (docs/FORMAT.md section 4.1).
struct TensorEntry: Codable, Equatable {
    var name: String
    var dtype: String
    var shape: [Int]
    var quant: QuantParams?
    /// Relative to the start of the data section.
    var offset: Int
    var length: Int
}

/// The whole metadata section: `{"metadata": …, "tensors": […]}`.
struct MetadataDocument: Codable {
    var metadata: ModelMetadata
    var tensors: [TensorEntry]

    /// Sorted keys and no whitespace: the same model always encodes to the same bytes.
    static func encoder() -> JSONEncoder {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        e.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
        return e
    }

    static func decoder() -> JSONDecoder {
        let d = JSONDecoder()
        d.nonConformingFloatDecodingStrategy = .convertFromString(
            positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
        return d
    }
}
