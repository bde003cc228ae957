import CCoreMLProto
import CProtobufC
import Foundation
import MLToolCore

/// Imports a Core ML NeuralNetworkClassifier (`.mlmodel`, the protobuf specification) with an image input and
/// classic layers — the form `mltool export --to coreml` writes — into a native image classifier.
///
/// Core ML blobs are (C, H, W) per image; the IR is NHWC, so kernels are transposed OIHW → HWIO, inner products
/// (OUT, IN) → (IN, OUT), and an inner product or channel-first flatten over a feature map reads it in CHW order
/// through a transpose. The image scaler becomes the model's preprocessing. Unknown layer types, "same" padding
/// and other unimplemented fields are refused with the layer named.
public enum CoreMLImporter {
    public static func importModel(path: String) throws -> Model {
        // An .mlpackage keeps its specification at a fixed place inside.
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            return try importModel(path: (path as NSString).appendingPathComponent("Data/com.apple.CoreML/model.mlmodel"))
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ImportError.unreadable(file: path, reason: "no such file or permission denied")
        }
        guard !data.isEmpty else { throw ImportError.malformed(file: path, reason: "the file is empty") }
        let parsed: UnsafeMutablePointer<CoreML__Specification__Model>? = data.withUnsafeBytes { raw in
            core_ml__specification__model__unpack(nil, raw.count, raw.baseAddress?.assumingMemoryBound(to: UInt8.self))
        }
        guard let spec = parsed else {
            throw ImportError.malformed(file: path, reason: "not a Core ML model specification (Model does not parse)")
        }
        defer { core_ml__specification__model__free_unpacked(spec, nil) }
        var builder = CoreMLGraphBuilder(file: path)
        return try builder.build(spec.pointee)
    }
}

func cString(_ p: UnsafeMutablePointer<CChar>?) -> String {
    guard let p else { return "" }
    return String(cString: p)
}
