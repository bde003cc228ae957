import MLToolCore

/// Everything that can be wrong with a model file, or with writing one. Each case names the file and the place
/// (byte offset, field, tensor or node) and, where it applies, what was expected and what was found.
public enum FormatError: MLToolError, Equatable {
    /// The file does not exist or cannot be opened.
    case cannotOpen(file: String, reason: String)
    /// Reading or mapping an opened file failed.
    case ioError(file: String, reason: String)
    /// The file is shorter than the format or its own header requires.
    case truncated(file: String, expected: UInt64, actual: Int)
    /// Magic bytes at `offset` (0: header, or the trailer's offset) are not the format's.
    case badMagic(file: String, offset: Int, expected: [UInt8], actual: [UInt8])
    /// A version this reader does not implement (a newer file, or 0).
    case unsupportedVersion(file: String, version: UInt32, supported: UInt32)
    /// A stored XXH64 checksum differs from the one computed over its section ("header", "metadata", "data", "file").
    case checksumMismatch(file: String, section: String, offset: Int, stored: UInt64, computed: UInt64)
    /// A header or table field holds a value the format does not allow.
    case invalidField(file: String, offset: Int, field: String, expected: String, actual: String)
    /// A count or length is above the format's cap.
    case capExceeded(file: String, what: String, limit: Int, actual: UInt64)
    /// A section (or a tensor) does not lie inside its container: [offset, offset + length) passes `limit`.
    case sectionOutOfBounds(file: String, section: String, offset: UInt64, length: UInt64, limit: UInt64)
    /// A section is not where the format places it (a hole or an overlap between sections).
    case sectionMisplaced(file: String, section: String, field: String, expected: UInt64, actual: UInt64)
    /// A padding byte is not zero.
    case nonZeroPadding(file: String, offset: Int)
    /// The metadata section is not valid JSON of the expected shape.
    case badMetadata(file: String, offset: Int, reason: String)
    /// A size computed from a tensor's shape overflows.
    case overflow(file: String, tensor: String, what: String)
    /// A tensor table entry is invalid (dtype, shape, length, quantization parameters...).
    case badTensor(file: String, tensor: String, field: String, expected: String, actual: String)
    /// Two tensors share a name.
    case duplicateName(file: String, tensor: String, index: Int, firstIndex: Int)
    /// A tensor starts before the end of the previous one (offsets relative to the data section).
    case overlap(file: String, tensor: String, previous: String, offset: Int, previousEnd: Int)
    /// A tensor starts after the next aligned offset (an empty `tensor` means the end of the data section).
    case hole(file: String, tensor: String, offset: Int, expected: Int)
    /// The graph or metadata names something that does not exist, or defines a name twice.
    case badGraph(file: String, node: String, field: String, reason: String)
    /// The detection settings (or the preprocessing a detector relies on) break docs/FORMAT.md rule 13.
    case badDetection(file: String, field: String, expected: String, actual: String)
    /// The output path is the same file (device and inode) as one of the command's inputs.
    case overwritesInput(file: String, input: String)
    /// The output could not be written.
    case cannotWrite(file: String, reason: String)

    public var exitStatus: ExitStatus {
        switch self {
        case .cannotOpen: return .noInput
        case .ioError: return .ioError
        case .overwritesInput, .cannotWrite: return .cannotCreate
        default: return .dataError
        }
    }

    public var description: String {
        switch self {
        case let .cannotOpen(file, reason):
            return "\(file): cannot open: \(reason)"
        case let .ioError(file, reason):
            return "\(file): I/O error: \(reason)"
        case let .truncated(file, expected, actual):
            return "\(file): truncated: the file ends at byte \(actual), expected \(expected) bytes"
        case let .badMagic(file, offset, expected, actual):
            return "\(file) at byte \(offset): not an mltool model: magic \(hex(actual)), expected \(hex(expected))"
        case let .unsupportedVersion(file, version, supported):
            return "\(file) at byte 8: format version \(version) is not supported (this mltool reads version \(supported))"
        case let .checksumMismatch(file, section, offset, stored, computed):
            return "\(file): \(section) checksum mismatch (section at byte \(offset)): stored "
                + "\(hex64(stored)), computed \(hex64(computed)): the file is damaged"
        case let .invalidField(file, offset, field, expected, actual):
            return "\(file) at byte \(offset): \(field): expected \(expected), found \(actual)"
        case let .capExceeded(file, what, limit, actual):
            return "\(file): \(what): \(actual) exceeds the limit of \(limit)"
        case let .sectionOutOfBounds(file, section, offset, length, limit):
            return "\(file): \(section): bytes [\(offset), \(offset) + \(length)) run past \(limit)"
        case let .sectionMisplaced(file, section, field, expected, actual):
            return "\(file): \(section): \(field) is \(actual), expected \(expected)"
        case let .nonZeroPadding(file, offset):
            return "\(file) at byte \(offset): padding byte is not zero"
        case let .badMetadata(file, offset, reason):
            return "\(file) at byte \(offset): metadata: \(reason)"
        case let .overflow(file, tensor, what):
            return "\(file): tensor '\(tensor)': \(what) overflows"
        case let .badTensor(file, tensor, field, expected, actual):
            return "\(file): tensor '\(tensor)': \(field): expected \(expected), found \(actual)"
        case let .duplicateName(file, tensor, index, firstIndex):
            return "\(file): tensor '\(tensor)': name of table entry \(index) is already used by entry \(firstIndex)"
        case let .overlap(file, tensor, previous, offset, previousEnd):
            return "\(file): tensor '\(tensor)': starts at data offset \(offset), inside tensor '\(previous)' "
                + "which ends at \(previousEnd)"
        case let .hole(file, tensor, offset, expected):
            let what = tensor.isEmpty ? "data section end" : "tensor '\(tensor)': start"
            return "\(file): \(what) is at data offset \(offset), expected \(expected) (no gaps allowed)"
        case let .badGraph(file, node, field, reason):
            return "\(file): \(node): \(field): \(reason)"
        case let .badDetection(file, field, expected, actual):
            return "\(file): detection: \(field): expected \(expected), found \(actual)"
        case let .overwritesInput(file, input):
            return "\(file): refusing to write: it is the same file as the input \(input)"
        case let .cannotWrite(file, reason):
            return "\(file): cannot write: \(reason)"
        }
    }

    private func hex(_ b: [UInt8]) -> String {
        b.map { let s = String($0, radix: 16, uppercase: true); return s.count == 1 ? "0" + s : s }
            .joined(separator: " ")
    }

    private func hex64(_ v: UInt64) -> String {
        let s = String(v, radix: 16, uppercase: true)
        return String(repeating: "0", count: 16 - s.count) + s
    }
}
