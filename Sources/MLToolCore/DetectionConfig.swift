/// How an object detector's graph outputs become boxes: the decoder and the non-maximum suppression that follows.
/// Normative definitions (encodings, layouts, the NMS rule): docs/FORMAT.md section 4.4; `validate` checks rule 14.
public struct DetectionConfig: Codable, Equatable, Sendable {
    /// "anchorGrid" (YOLOv3/v5 anchor boxes), "anchorFree" (YOLOv8 distances from cell centres) or "boxes" (a graph
    /// output already holding boxes).
    public var decoder: String
    public var classCount: Int
    /// anchorGrid: "yolov5" | "yolov3"; anchorFree: "dfl" | "ltrb"; boxes: "cxcywh" | "xyxy" | "yxyx".
    public var boxEncoding: String
    /// anchorGrid / anchorFree: one per output map.
    public var heads: [DetectionHead]?
    /// dfl: bins per box side.
    public var regMax: Int?
    /// boxes: where the boxes and scores are.
    public var boxes: BoxesOutput?
    public var nms: NMSSettings

    public init(decoder: String, classCount: Int, boxEncoding: String, heads: [DetectionHead]? = nil, regMax: Int? = nil,
                boxes: BoxesOutput? = nil, nms: NMSSettings = NMSSettings()) {
        self.decoder = decoder; self.classCount = classCount; self.boxEncoding = boxEncoding; self.heads = heads
        self.regMax = regMax; self.boxes = boxes; self.nms = nms
    }

    public static let decoders: [String: [String]] = [
        "anchorGrid": ["yolov5", "yolov3"], "anchorFree": ["dfl", "ltrb"], "boxes": ["cxcywh", "xyxy", "yxyx"],
    ]

    /// YOLOv5/v3-style raw heads: one (tensor, stride, anchors) per output map.
    public static func anchorGrid(classes: Int, heads: [DetectionHead], encoding: String = "yolov5",
                                  nms: NMSSettings = NMSSettings()) -> DetectionConfig {
        DetectionConfig(decoder: "anchorGrid", classCount: classes, boxEncoding: encoding, heads: heads, nms: nms)
    }

    /// YOLOv8-style raw heads with distribution focal loss bins (`regMax` per side, 16 in Ultralytics' models).
    public static func anchorFree(classes: Int, heads: [DetectionHead], regMax: Int = 16,
                                  nms: NMSSettings = NMSSettings()) -> DetectionConfig {
        DetectionConfig(decoder: "anchorFree", classCount: classes, boxEncoding: regMax > 0 ? "dfl" : "ltrb", heads: heads,
                        regMax: regMax > 0 ? regMax : nil, nms: nms)
    }

    /// A graph output that already holds decoded boxes: Ultralytics' YOLOv8 export is
    /// `boxes(classes:, tensor: "output0", layout: "nkb")`, its YOLOv5 export `layout: "nbk", objectness: true`.
    public static func boxes(classes: Int, tensor: String, layout: String = "nkb", encoding: String = "cxcywh",
                             objectness: Bool = false, nms: NMSSettings = NMSSettings()) -> DetectionConfig {
        DetectionConfig(decoder: "boxes", classCount: classes, boxEncoding: encoding,
                        boxes: BoxesOutput(tensor: tensor, layout: layout, objectness: objectness), nms: nms)
    }

    /// The graph outputs the decoder reads, in a fixed order.
    public var tensors: [String] {
        (heads ?? []).map(\.tensor) + [boxes?.tensor, boxes?.scoresTensor].compactMap { $0 }
    }
}

/// One output map of a grid decoder.
public struct DetectionHead: Codable, Equatable, Sendable {
    /// A graph output, IR shape (N, H, W, channels).
    public var tensor: String
    /// Input pixels per grid cell.
    public var stride: Int
    /// anchorGrid: per anchor, its width and height in input pixels.
    public var anchors: [[Float]]?

    public init(tensor: String, stride: Int, anchors: [[Float]]? = nil) {
        self.tensor = tensor; self.stride = stride; self.anchors = anchors
    }
}

/// Where a "boxes" decoder finds boxes and scores.
public struct BoxesOutput: Codable, Equatable, Sendable {
    /// (N, B, K) for layout "nbk", (N, K, B) for "nkb".
    public var tensor: String
    public var layout: String
    /// Value 4 of each box is an objectness score multiplying the class scores.
    public var objectness: Bool
    /// Class scores in their own output: (N, B, C) for "nbc", (N, C, B) for "ncb".
    public var scoresTensor: String?
    public var scoresLayout: String?
    /// "none" or "sigmoid", applied to objectness and class scores.
    public var scoreActivation: String
    /// Coordinates are fractions of the input width and height.
    public var normalized: Bool

    public init(tensor: String, layout: String = "nkb", objectness: Bool = false, scoresTensor: String? = nil,
                scoresLayout: String? = nil, scoreActivation: String = "none", normalized: Bool = false) {
        self.tensor = tensor; self.layout = layout; self.objectness = objectness; self.scoresTensor = scoresTensor
        self.scoresLayout = scoresLayout; self.scoreActivation = scoreActivation; self.normalized = normalized
    }
}

/// Non-maximum suppression settings (docs/FORMAT.md section 4.4 gives the rule).
public struct NMSSettings: Codable, Equatable, Sendable {
    public var iouThreshold: Float
    public var confidenceThreshold: Float
    /// Suppress only among boxes of the same class (Ultralytics' default); false: class-agnostic.
    public var perClass: Bool
    public var maxDetections: Int
    /// At most this many boxes per class (ONNX NonMaxSuppression's max_output_boxes_per_class).
    public var maxPerClass: Int?

    /// Ultralytics' prediction defaults, with Core ML's NonMaximumSuppression default of 100 boxes.
    public init(iouThreshold: Float = 0.45, confidenceThreshold: Float = 0.25, perClass: Bool = true,
                maxDetections: Int = 100, maxPerClass: Int? = nil) {
        self.iouThreshold = iouThreshold; self.confidenceThreshold = confidenceThreshold; self.perClass = perClass
        self.maxDetections = maxDetections; self.maxPerClass = maxPerClass
    }
}

extension DetectionConfig {
    /// The first way `self` breaks docs/FORMAT.md section 4.4 (field, expected, actual), or nil. `outputs` are the
    /// graph's outputs and `labels` the model's class names.
    public func problem(outputs: [String], labels: [String]) -> (field: String, expected: String, actual: String)? {
        guard let encodings = Self.decoders[decoder] else {
            return ("decoder", "anchorGrid, anchorFree or boxes", "'\(decoder)'")
        }
        guard encodings.contains(boxEncoding) else {
            return ("boxEncoding", encodings.joined(separator: " or ") + " for decoder \(decoder)", "'\(boxEncoding)'")
        }
        guard classCount >= 1, classCount <= 100_000 else { return ("classCount", "1…100000", "\(classCount)") }
        if !labels.isEmpty && labels.count != classCount {
            return ("classCount", "\(labels.count) (one per label)", "\(classCount)")
        }
        func output(_ field: String, _ name: String) -> (String, String, String)? {
            outputs.contains(name) ? nil : (field, "a graph output", "'\(name)'")
        }
        if decoder == "boxes" {
            if heads != nil { return ("heads", "absent for decoder boxes", "present") }
            if regMax != nil { return ("regMax", "absent for decoder boxes", "present") }
            guard let b = boxes else { return ("boxes", "present for decoder boxes", "absent") }
            if let p = output("boxes.tensor", b.tensor) { return p }
            guard ["nbk", "nkb"].contains(b.layout) else { return ("boxes.layout", "nbk or nkb", "'\(b.layout)'") }
            guard ["none", "sigmoid"].contains(b.scoreActivation) else {
                return ("boxes.scoreActivation", "none or sigmoid", "'\(b.scoreActivation)'")
            }
            if let s = b.scoresTensor {
                if let p = output("boxes.scoresTensor", s) { return p }
                guard let l = b.scoresLayout, ["nbc", "ncb"].contains(l) else {
                    return ("boxes.scoresLayout", "nbc or ncb", b.scoresLayout.map { "'\($0)'" } ?? "absent")
                }
                if b.objectness { return ("boxes.objectness", "false with a scoresTensor", "true") }
            } else if let l = b.scoresLayout {
                return ("boxes.scoresLayout", "absent without a scoresTensor", "'\(l)'")
            }
        } else {
            if boxes != nil { return ("boxes", "absent for decoder \(decoder)", "present") }
            guard let hs = heads, !hs.isEmpty else { return ("heads", "at least one head", "none") }
            for (i, h) in hs.enumerated() {
                if let p = output("heads[\(i)].tensor", h.tensor) { return p }
                guard h.stride >= 1, h.stride <= 65_536 else { return ("heads[\(i)].stride", "1…65536", "\(h.stride)") }
                if decoder == "anchorGrid" {
                    guard let a = h.anchors, !a.isEmpty else { return ("heads[\(i)].anchors", "at least one anchor", "none") }
                    guard a.count <= 1024 else { return ("heads[\(i)].anchors", "at most 1024 anchors", "\(a.count)") }
                    for (j, wh) in a.enumerated() where wh.count != 2 || !wh.allSatisfy({ $0.isFinite && $0 > 0 }) {
                        return ("heads[\(i)].anchors[\(j)]", "a width and a height, finite and > 0", "\(wh)")
                    }
                } else if h.anchors != nil {
                    return ("heads[\(i)].anchors", "absent for decoder anchorFree", "present")
                }
            }
            if boxEncoding == "dfl" {
                guard let r = regMax, r >= 1, r <= 4096 else { return ("regMax", "1…4096 for encoding dfl", regMax.map(String.init) ?? "absent") }
            } else if regMax != nil {
                return ("regMax", "absent for encoding \(boxEncoding)", "present")
            }
        }
        let n = nms
        guard n.iouThreshold >= 0, n.iouThreshold <= 1 else { return ("nms.iouThreshold", "0…1", "\(n.iouThreshold)") }
        guard n.confidenceThreshold >= 0, n.confidenceThreshold <= 1 else {
            return ("nms.confidenceThreshold", "0…1", "\(n.confidenceThreshold)")
        }
        guard n.maxDetections >= 1, n.maxDetections <= 1_000_000 else { return ("nms.maxDetections", "1…1000000", "\(n.maxDetections)") }
        if let m = n.maxPerClass, m < 1 { return ("nms.maxPerClass", "≥ 1", "\(m)") }
        return nil
    }
}
