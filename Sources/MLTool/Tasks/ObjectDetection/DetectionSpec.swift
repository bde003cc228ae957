import Foundation
import MLToolCore

/// The `--decoder` text of `mltool import --task detect`, as a `DetectionConfig` (docs/FORMAT.md 4.4):
///
///     yolov8[:TENSOR]                 Ultralytics YOLOv8/v11 export: boxes (N, 4 + C, B), cx cy w h, no objectness
///     yolov5[:TENSOR]                 Ultralytics YOLOv5 export: boxes (N, B, 5 + C), cx cy w h, objectness
///     boxes:TENSOR:LAYOUT:ENCODING[:objectness][:normalized][:sigmoid]
///                                     any decoded output: LAYOUT nkb|nbk, ENCODING cxcywh|xyxy|yxyx
///     anchor-free:T@S,T@S…[:regmax=N] raw anchor-free heads (N bins per side, 16 by default; 0: plain ltrb)
///     anchor-grid[:yolov3]:T@S=WxH/WxH…,T@S=…  raw anchor heads, anchors in input pixels (yolov5 encoding unless yolov3)
///
/// TENSOR defaults to "output0" (Ultralytics' name).
public enum DetectionSpec {
    public static func parse(_ text: String, classes: Int, nms: NMSSettings) throws -> DetectionConfig {
        func bad(_ why: String) -> PipelineError {
            .invalidParameter(name: "decoder", reason: "'\(text)': \(why) (forms: yolov8[:TENSOR], yolov5[:TENSOR], boxes:TENSOR:nkb|nbk:cxcywh|xyxy|yxyx[:objectness][:normalized][:sigmoid], anchor-free:T@S,…[:regmax=N], anchor-grid[:yolov3]:T@S=WxH/…,…)")
        }
        guard classes >= 1 else { throw PipelineError.invalidParameter(name: "classes", reason: "a detector needs at least one class (--classes N or --labels FILE)") }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        func head(_ item: Substring) throws -> DetectionHead {
            let tensorAndRest = item.split(separator: "@", maxSplits: 1).map(String.init)
            guard tensorAndRest.count == 2, !tensorAndRest[0].isEmpty else { throw bad("a head is TENSOR@STRIDE") }
            let strideAndAnchors = tensorAndRest[1].split(separator: "=", maxSplits: 1).map(String.init)
            guard let stride = Int(strideAndAnchors[0]), (1...65_536).contains(stride) else { throw bad("stride '\(strideAndAnchors[0])' is not 1…65536") }
            var anchors: [[Float]]?
            if strideAndAnchors.count == 2 {
                anchors = try strideAndAnchors[1].split(separator: "/").map { a in
                    let wh = a.lowercased().split(separator: "x").compactMap { Float($0) }
                    guard wh.count == 2, wh.allSatisfy({ $0 > 0 && $0.isFinite }) else { throw bad("anchor '\(a)' is not WxH in pixels") }
                    return wh
                }
            }
            return DetectionHead(tensor: tensorAndRest[0], stride: stride, anchors: anchors)
        }
        switch parts[0] {
        case "yolov8", "yolov5":
            guard parts.count <= 2 else { throw bad("too many fields") }
            let tensor = parts.count == 2 && !parts[1].isEmpty ? parts[1] : "output0"
            return parts[0] == "yolov8" ? .boxes(classes: classes, tensor: tensor, layout: "nkb", nms: nms)
                : .boxes(classes: classes, tensor: tensor, layout: "nbk", objectness: true, nms: nms)
        case "boxes":
            guard parts.count >= 4, !parts[1].isEmpty, ["nkb", "nbk"].contains(parts[2]), ["cxcywh", "xyxy", "yxyx"].contains(parts[3]) else {
                throw bad("boxes needs TENSOR, a layout (nkb or nbk) and an encoding (cxcywh, xyxy or yxyx)")
            }
            let flags = Set(parts.dropFirst(4))
            guard flags.isSubset(of: ["objectness", "normalized", "sigmoid"]) else { throw bad("unknown flag among \(flags.sorted())") }
            var c = DetectionConfig.boxes(classes: classes, tensor: parts[1], layout: parts[2], encoding: parts[3],
                                          objectness: flags.contains("objectness"), nms: nms)
            c.boxes?.normalized = flags.contains("normalized")
            c.boxes?.scoreActivation = flags.contains("sigmoid") ? "sigmoid" : "none"
            return c
        case "anchor-free":
            guard parts.count >= 2, parts.count <= 3 else { throw bad("anchor-free needs its heads") }
            var regMax = 16
            if parts.count == 3 {
                guard parts[2].hasPrefix("regmax="), let n = Int(parts[2].dropFirst(7)), (0...4096).contains(n) else { throw bad("expected regmax=N") }
                regMax = n
            }
            let heads = try parts[1].split(separator: ",").map(head)
            guard !heads.isEmpty, heads.allSatisfy({ $0.anchors == nil }) else { throw bad("anchor-free heads are TENSOR@STRIDE, without anchors") }
            return .anchorFree(classes: classes, heads: heads, regMax: regMax, nms: nms)
        case "anchor-grid":
            let yolov3 = parts.count == 3 && parts[1] == "yolov3"
            guard parts.count == 2 || yolov3 else { throw bad("anchor-grid takes [yolov3:] and its heads") }
            let heads = try parts[parts.count - 1].split(separator: ",").map(head)
            guard !heads.isEmpty, heads.allSatisfy({ !($0.anchors ?? []).isEmpty }) else { throw bad("anchor-grid heads are TENSOR@STRIDE=WxH/WxH…") }
            return .anchorGrid(classes: classes, heads: heads, encoding: yolov3 ? "yolov3" : "yolov5", nms: nms)
        default:
            throw bad("unknown decoder '\(parts[0])'")
        }
    }
}
