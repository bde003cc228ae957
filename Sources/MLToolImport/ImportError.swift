import Foundation
import MLToolCore

/// Errors of the ONNX and Keras importers. Every case names the file and the place.
public enum ImportError: MLToolError, Equatable {
    /// One entry per unsupported op type (or layer class): how many nodes use it and the first few node names.
    public struct Unsupported: Equatable, Sendable {
        public var op: String
        public var count: Int
        public var firstNodes: [String]
        public init(op: String, count: Int, firstNodes: [String]) {
            self.op = op; self.count = count; self.firstNodes = firstNodes
        }
    }

    /// Every unsupported op or layer of the file, all at once.
    case unsupported(file: String, ops: [Unsupported])
    /// A field holds something the importer cannot accept.
    case invalid(file: String, place: String, expected: String, actual: String)
    /// The file asks for something refused on purpose (code-carrying layers, paths leaving the model directory,
    /// HDF5 external links, ...).
    case refused(file: String, place: String, reason: String)
    /// The file could not be parsed at all.
    case malformed(file: String, reason: String)
    /// The file does not exist or cannot be read.
    case unreadable(file: String, reason: String)
    /// The sandbox an untrusted parser must run in could not be set up; the file was not read.
    case isolation(file: String, reason: String)

    public var exitStatus: ExitStatus {
        switch self {
        case .unreadable: return .noInput
        case .isolation: return .osError
        default: return .dataError
        }
    }

    public var description: String {
        switch self {
        case let .unsupported(file, ops):
            let total = ops.reduce(0) { $0 + $1.count }
            let lines = ops.map { u in
                "  \(u.op) ×\(u.count) (\(u.firstNodes.map { "'\($0)'" }.joined(separator: ", "))\(u.count > u.firstNodes.count ? ", …" : ""))"
            }
            return "\(file): \(total) node\(total == 1 ? "" : "s") of \(ops.count) unsupported type\(ops.count == 1 ? "" : "s"):\n"
                + lines.joined(separator: "\n")
        case let .invalid(file, place, expected, actual):
            return "\(file): \(place): expected \(expected), found \(actual)"
        case let .refused(file, place, reason):
            return "\(file): \(place): refused: \(reason)"
        case let .malformed(file, reason):
            return "\(file): not a valid model: \(reason)"
        case let .unreadable(file, reason):
            return "\(file): cannot read: \(reason)"
        case let .isolation(file, reason):
            return "\(file): not read: \(reason)"
        }
    }
}

/// What the user tells `mltool import` about the model, beyond what the file says. Stored in the model's metadata.
public struct ImportOptions: Sendable {
    /// Preprocessing to record (input size, colour order, scale/bias or mean/std, resize and crop).
    public var image: ImagePreprocessing?
    /// Class names, one per output index.
    public var labels: [String]
    /// The tensor whose values are the features, for use as an extractor (e.g. the pooled 1280-wide layer).
    public var featureTensor: String?
    /// Fixed input height/width when the source leaves them free.
    public var inputSize: (height: Int, width: Int)?
    /// Makes the model an object detector: how its outputs become boxes (checked against the graph's output
    /// shapes). A graph that ends in NonMaxSuppression sets this itself; then it must be nil. When the tensors it
    /// names are not all graph outputs (an mltool ONNX or TFLite export of a detector: its `metadata_props` or
    /// "mltool" metadata "detection"), the importer reads only the nodes they need and makes them the outputs.
    public var detection: DetectionConfig?

    public init(image: ImagePreprocessing? = nil, labels: [String] = [], featureTensor: String? = nil,
                inputSize: (height: Int, width: Int)? = nil, detection: DetectionConfig? = nil) {
        self.image = image; self.labels = labels; self.featureTensor = featureTensor; self.inputSize = inputSize
        self.detection = detection
    }
}

extension ImportOptions {
    /// A file mltool exported from a detector records its labels, preprocessing and detection settings as key/value
    /// pairs (ONNX `metadata_props`, the TFLite "mltool" metadata entry: `container` names it in errors); when no
    /// options were given they are taken from there. Options given explicitly win; recorded values that do not parse
    /// are an error naming the key.
    func adoptingExportedDetector(_ pairs: [String: String], file: String, container: String) throws -> ImportOptions {
        guard detection == nil, image == nil, labels.isEmpty, pairs["exported_by"]?.hasPrefix("mltool ") == true,
              pairs["task"] == "objectDetector", let recorded = pairs["detection"] else { return self }
        func decode<T: Decodable>(_ type: T.Type, _ key: String, _ text: String) throws -> T {
            guard let v = try? JSONDecoder().decode(type, from: Data(text.utf8)) else {
                throw ImportError.invalid(file: file, place: "\(container) '\(key)'", expected: "the JSON mltool's export writes",
                                          actual: String(text.prefix(80)))
            }
            return v
        }
        var o = self
        o.detection = try decode(DetectionConfig.self, "detection", recorded)
        if let l = pairs["labels"] { o.labels = try decode([String].self, "labels", l) }
        if let p = pairs["preprocessing.json"] {
            o.image = try decode(ImagePreprocessing.self, "preprocessing.json", p)
            o.inputSize = o.image.map { ($0.height, $0.width) }
        }
        return o
    }
}
