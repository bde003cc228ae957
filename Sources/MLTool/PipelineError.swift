import MLToolCore

/// Errors of the pipelines themselves (data that cannot be used, parameters out of range, files that are not
/// there); the algorithms below them throw their own module's errors, which pass through unchanged.
public enum PipelineError: MLToolError, Equatable {
    /// An input file or folder does not exist or cannot be read.
    case missingInput(file: String, reason: String)
    /// An input exists but cannot be used.
    case badInput(file: String, reason: String)
    /// A parameter is out of range or contradicts another; `name` is the parameter, `reason` says what is wrong.
    case invalidParameter(name: String, reason: String)
    /// Something the pipeline does not do yet.
    case notSupported(String)
    /// A path a request named (`field`) that leads outside `folder` (`mltool studio`'s project): absolute, through
    /// `..`, or through a symbolic link out of it.
    case outsideFolder(field: String, path: String, folder: String, reason: String)

    public var exitStatus: ExitStatus {
        switch self {
        case .missingInput: return .noInput
        case .badInput, .notSupported: return .dataError
        case .invalidParameter, .outsideFolder: return .usage
        }
    }

    public var description: String {
        switch self {
        case let .missingInput(file, reason), let .badInput(file, reason): return "\(file): \(reason)"
        case let .invalidParameter(_, reason): return reason
        case let .notSupported(what): return "not yet supported: \(what)"
        case let .outsideFolder(field, path, folder, reason):
            return "\(field) '\(path)': \(reason); paths must stay inside the project folder \(folder)"
        }
    }
}
