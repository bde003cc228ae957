import MLToolCore

/// Errors of the ONNX and Core ML exporters. Every case names the model and the place.
public enum ExportError: MLToolError, Equatable {
    /// The model cannot be expressed in the target format, and why.
    case unsupported(model: String, format: String, place: String, reason: String)
    /// The model's own data is inconsistent (a missing tensor, a bad shape).
    case invalid(model: String, place: String, expected: String, actual: String)
    /// The protobuf encoder failed.
    case encoding(model: String, format: String, reason: String)

    public var exitStatus: ExitStatus { .dataError }

    public var description: String {
        switch self {
        case let .unsupported(model, format, place, reason):
            return "\(model): cannot export to \(format): \(place): \(reason)"
        case let .invalid(model, place, expected, actual):
            return "\(model): \(place): expected \(expected), found \(actual)"
        case let .encoding(model, format, reason):
            return "\(model): \(format) encoding failed: \(reason)"
        }
    }
}
