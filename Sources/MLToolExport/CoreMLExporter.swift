import MLToolCore

/// Writes an image classifier as a Core ML model.
public enum CoreMLExporter {
    public struct Result: Sendable {
        public var bytes: [UInt8]
        public var notes: [String]
    }

    public static func export(_ model: Model, name: String) throws -> Result {
        throw ExportError.unsupported(model: name, format: "Core ML", place: "model", reason: "not yet supported")
    }
}
