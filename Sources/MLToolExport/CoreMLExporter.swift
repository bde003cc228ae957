import MLToolCore

/// Writes an image classifier as a Core ML model (specification version 5: iOS 14 / macOS 11): a
/// NeuralNetworkClassifier with an RGB (or BGR / grayscale) image input of the model's size, the preprocessing as a
/// NeuralNetworkImageScaler, outputs `classLabel` (string) and `classLabelProbs` (label → probability), and the
/// model's description, author, license and version as metadata (plus labels, preprocessing and provenance in
/// userDefined). int8 weights are 8-bit linear-quantized WeightParams, single-table palettes look-up-table ones,
/// f16 weights half floats.
public enum CoreMLExporter {
    /// Exports `model`; `name` identifies it in errors (usually its path). A tabular model becomes a tree ensemble
    /// instead (`CoreMLTreeEnsemble`).
    ///
    /// An object detector (`metadata.detection`: anchorFree ltrb or dfl, or boxes) becomes a Pipeline instead: a NeuralNetwork (the
    /// network and the decoder, `CoreMLDetection.swift`) with outputs `raw_confidence` (B × C) and `raw_coordinates`
    /// (B × 4), then a NonMaximumSuppression model with the detector's IoU and confidence thresholds and labels;
    /// inputs `image`, optional `iouThreshold` and `confidenceThreshold`, outputs `confidence` and `coordinates`
    /// (docs/COREML.md says what Vision sees). `headShapes`: each head tensor's IR shape (N, H, W, channels).
    /// A "boxes" detector needs `boxes`: where its boxes and scores come from (`BoxesTrace`, which `ModelExport` makes).
    public static func export(_ model: Model, name: String, headShapes: [String: [Int]] = [:], boxes: BoxesTrace? = nil) throws -> ExportResult {
        if model.metadata.task == .tabular { return try CoreMLTreeEnsemble.export(model, name: name) }
        let md = model.metadata
        let graph = try ExportResult.graph(
            of: model, name: name, format: "Core ML",
            textReason: "Core ML's built-in text classifier (CoreMLModels.TextClassifier) wraps Apple's own Create ML "
                + "models; mltool's tokenizer, n-grams and TF-IDF weighting would need a custom layer")
        guard !md.labels.isEmpty || md.detection != nil else {
            throw ExportError.unsupported(model: name, format: "Core ML", place: "labels",
                                          reason: "a classifier needs class labels (import with --labels)")
        }
        guard let prep = md.image else {
            throw ExportError.unsupported(model: name, format: "Core ML", place: "preprocessing",
                                          reason: "the model records no image preprocessing (import with --input-size and --scale/--bias)")
        }
        let channels = prep.colorOrder == "gray" ? 1 : 3
        guard prep.std.count == channels, prep.bias.count == channels, prep.mean.count == channels,
              prep.std.allSatisfy({ $0 == prep.std[0] && $0 != 0 }) else {
            throw ExportError.unsupported(model: name, format: "Core ML", place: "preprocessing",
                                          reason: "an image scaler has one scale for all channels; std \(prep.std) differs per channel")
        }
        var lowering = CoreMLLowering(model: model, name: name, graph: graph)
        var extra: [(String, String)] = []
        var labels = md.labels
        if let detection = md.detection {
            try lowering.lowerDetector(detection, inputWidth: prep.width, inputHeight: prep.height, headShapes: headShapes, boxes: boxes)
            if labels.count != detection.classCount { labels = (0..<detection.classCount).map { "class \($0)" } }
            // The keys Xcode's object detectors carry, and how Vision must scale a photo.
            extra = [("classes", labels.joined(separator: ",")), ("iouThreshold", "\(detection.nms.iouThreshold)"),
                     ("confidenceThreshold", "\(detection.nms.confidenceThreshold)"), ("detection", ExportMetadata.json(detection)),
                     ("imageCropAndScaleOption", prep.resize == "letterbox" ? "scaleFit" : prep.resize == "shorter" ? "centerCrop" : "scaleFill")]
        } else {
            try lowering.lower(probabilities: md.outputKind == "probabilities")
        }
        var p = lowering.program
        p.height = prep.height; p.width = prep.width
        p.colorSpace = ["gray": 10, "bgr": 30][prep.colorOrder] ?? 20
        // value = (pixel · scale + bias − mean) / std = pixel · (scale / std) + (bias − mean) / std
        let std = prep.std[0]
        p.channelScale = prep.scale / std
        p.channelBias = (0..<channels).map { (prep.bias[$0] - prep.mean[$0]) / std }
        p.labels = labels
        p.author = md.author ?? ""
        p.license = md.license ?? ""
        p.version = md.version ?? ""
        p.shortDescription = md.description ?? "\(md.name ?? (md.detection == nil ? "image classifier" : "object detector")) (exported by mltool \(MLToolInfo.version))"
        p.metadata = ExportMetadata.pairs(md, notes: lowering.notes, inputLayout: "Core ML image (preprocessing applied by the image scaler)") + extra
        return ExportResult(bytes: try CoreMLWriter.pack(p, modelName: name), notes: lowering.notes)
    }
}
