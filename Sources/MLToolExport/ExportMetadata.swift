import Foundation
import MLToolCore

/// The model facts both exporters record beside the network: labels, preprocessing, provenance (`portable`: no
/// path of the machine it was trained on), authorship.
enum ExportMetadata {
    /// Key/value pairs (ONNX `metadata_props`, Core ML `userDefined`), in a fixed order.
    static func pairs(_ md: ModelMetadata, notes: [String], inputLayout: String) -> [(String, String)] {
        var out = [(String, String)]()
        if let v = md.name { out.append(("name", v)) }
        if let v = md.author { out.append(("author", v)) }
        if let v = md.license { out.append(("license", v)) }
        if let v = md.version { out.append(("version", v)) }
        if let v = md.description { out.append(("description", v)) }
        out.append(("task", md.task.rawValue))
        if !md.labels.isEmpty { out.append(("labels", json(md.labels))) }
        if let v = md.outputKind { out.append(("output_kind", v)) }
        if let p = md.image {
            out.append(("preprocessing", sentence(p, layout: inputLayout)))
            out.append(("preprocessing.json", json(p)))
        }
        // Never a path of the training machine (its folders, its user's home): file names and hashes only.
        out.append(("provenance", json(md.provenance.exported())))
        out.append(("exported_by", "mltool \(MLToolInfo.version)"))
        out.append(("weights", notes.isEmpty ? "as stored in the source model" : notes.joined(separator: "; ")))
        return out
    }

    /// A sentence saying how to turn an image into the input tensor.
    static func sentence(_ p: ImagePreprocessing, layout: String) -> String {
        let resize = p.resize == "shorter"
            ? "resize the shorter side to \(p.resizeTo ?? max(p.height, p.width)) pixels keeping the aspect ratio"
            : p.resize == "letterbox"
            ? "letterbox to \(p.height)×\(p.width) (scale by min(\(p.height)/h, \(p.width)/w) keeping the aspect ratio, "
                + "centre on pixel value \(p.padValue ?? 0))"
            : "resize to \(p.height)×\(p.width)"
        let crop = p.crop == "center" ? ", centre-crop \(p.height)×\(p.width)" : ""
        return "\(resize)\(crop); channels \(p.colorOrder); value = (pixel · \(p.scale) + bias[c] − mean[c]) / std[c] "
            + "for pixels in 0…255 with bias \(p.bias), mean \(p.mean), std \(p.std); layout \(layout) float32"
    }

    /// How a detector export's outputs read (ONNX: int64 labels; TFLite: int32).
    static func detectionSentence(_ c: DetectionConfig, labelType: String) -> String {
        let n = c.nms
        return "one image (batch 1); detected_boxes (K, 4): x1, y1, x2, y2 in pixels of the model input (after the "
            + "preprocessing's resize or letterbox); detected_scores (K): confidence in 0…1; detected_labels (K, \(labelType)): "
            + "index into labels; highest score first; NMS \(n.perClass ? "per class" : "class-agnostic"), IoU > "
            + "\(n.iouThreshold) suppresses, scores > \(n.confidenceThreshold) kept, at most \(n.maxDetections)"
            + (n.maxPerClass.map { " (\($0) per class)" } ?? "")
    }

    static func json<T: Encodable>(_ v: T) -> String {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? e.encode(v)).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }
}
