import MLToolCore

/// Writes an image model as a TensorFlow Lite flatbuffer (schema version 3, file identifier "TFL3") for LiteRT's
/// interpreter: one subgraph, input the model's graph input as float32 NHWC (N, H, W, C) holding the *preprocessed*
/// image (as the ONNX export's, in TFLite's own layout), batch free; output the model's first graph output
/// (probabilities for trained classifiers). Weights keep their storage behind a DEQUANTIZE (`TFLiteWeights`): int8
/// as TFLite int8 with mltool's scales and zero points, palettes with an int8 table as the int8 they equal, float-table
/// palettes as int8 or float16 (the nearer), f16 as float16; activations are float32. `notes` lists every weight so
/// kept.
///
/// The preprocessing, labels and provenance are in the model's metadata: the entry "mltool" holds the same key/value
/// pairs as the ONNX export's metadata_props, as a JSON object; the entry "TFLITE_METADATA" the TFLite Support
/// metadata (`TFLiteMetadata`: normalization, image size, labels.txt, which is appended to the file as a zip).
///
/// An object detector (`metadata.detection`: every decoder) ends in its decoder and NON_MAX_SUPPRESSION_V4
/// instead (`TFLiteDetection.swift`): one image in, `detected_boxes` (K, 4), `detected_scores` (K) and
/// `detected_labels` (K, int32) out, with `detection` (the settings as JSON) and `detection_outputs` (a sentence) in
/// the "mltool" entry, which `TFLiteImporter` reads to give the detector back.
public enum TFLiteExporter {
    /// Exports `model`; `name` identifies it in errors (usually its path). `shapes`: the IR shape of every tensor the
    /// graph computes for one image at the model's input size (`ModelExport.tensorShapes` infers them).
    public static func export(_ model: Model, name: String, shapes: [String: [Int]]) throws -> ExportResult {
        let md = model.metadata
        let graph = try ExportResult.graph(
            of: model, name: name, format: "TensorFlow Lite",
            textReason: textRefusal(md.text))
        var lowering = TFLiteLowering(model: model, name: name, graph: md.detection.map { decoderGraph(graph, $0) } ?? graph, shapes: shapes)
        try lowering.lower()
        var extra: [(String, String)] = []
        if let detection = md.detection {
            guard let image = md.image else {
                throw ExportError.unsupported(model: name, format: "TensorFlow Lite", place: "preprocessing",
                                              reason: "a detector needs its input size (import with --input-size)")
            }
            try lowering.lowerDetection(detection, inputWidth: image.width, inputHeight: image.height)
            extra = [("detection", ExportMetadata.json(detection)), ("detection_outputs", ExportMetadata.detectionSentence(detection, labelType: "int32"))]
        }
        var program = lowering.program
        program.description = md.description ?? "exported by mltool \(MLToolInfo.version)"
        var notes = Array(Set(lowering.notes)).sorted()
        if let n = md.detection?.nms {
            notes.append("NMS as NON_MAX_SUPPRESSION_V4 on the candidates sorted by TOPK_V2 (IoU threshold \(n.iouThreshold.nextUp), the "
                + "next float after \(n.iouThreshold): it suppresses at IoU ≥ its threshold, mltool above it; IoU in float32, mltool's in double)")
        }
        var pairs = [String: String]()
        for (k, v) in ExportMetadata.pairs(md, notes: notes, inputLayout: "NHWC") + extra { pairs[k] = v }
        program.metadata.append((name: "mltool", buffer: program.buffer(Array(ExportMetadata.json(pairs).utf8))))
        let output = md.detection != nil ? TFLiteLowering.detectionOutputs[2] : graph.outputs.first ?? ""
        let support = try TFLiteMetadata.buffer(md, input: graph.inputs.first?.name ?? "", output: output,
                                                valueLabels: md.detection != nil, notes: &notes)
        program.metadata.append((name: "TFLITE_METADATA", buffer: program.buffer(support)))
        var bytes = try TFLiteWriter.pack(program, modelName: name)
        if !md.labels.isEmpty {
            let labels = Array(md.labels.joined(separator: "\n").utf8) + [0x0a]
            bytes += TFLiteMetadata.zip([(TFLiteMetadata.labelFile, labels)], prefixLength: bytes.count)
        }
        return ExportResult(bytes: bytes, notes: notes)
    }

    /// A detector's graph cut to the nodes its decoder's tensors need, those tensors its outputs: what else the
    /// network computes (an ONNX detector's decoded output beside the raw heads a grid decoder reads) is left out, as
    /// the file's only outputs are the decoder's and NMS's.
    static func decoderGraph(_ graph: Graph, _ d: DetectionConfig) -> Graph {
        var cut = graph
        cut.nodes = GraphPasses.nodes(graph.nodes, feeding: d.tensors).nodes
        cut.outputs = d.tensors
        return cut
    }

    /// Why a text classifier is refused. TFLite's builtin operators take no strings, and the Task Library's
    /// NLClassifier convention (int32 ids of the tokens its RegexTokenizer splits off, looked up in a vocab.txt
    /// associated file) cannot give mltool's features: terms come from mltool's own tokenizer (`TextTokenizer`), which
    /// a delimiter regex does not reproduce, and include n-grams a token lookup never forms.
    static func textRefusal(_ t: TextConfig?) -> String {
        var terms = ["words (runs of Unicode letters, marks and digits, apostrophes inside)"]
        if let n = t?.wordNgrams, n.count == 2, n[1] > 1 { terms.append("word \(n[0])–\(n[1])-grams") }
        if let n = t?.charNgrams, n.count == 2 { terms.append("character \(n[0])–\(n[1])-grams") }
        if t?.hashBits != nil { terms.append("hashed into buckets") }
        let prep = [t?.normalization == "nfkc" ? "NFKC" : nil, t?.lowercase == true ? "lower-casing" : nil].compactMap { $0 }
        return "its features are mltool's terms (" + (prep.isEmpty ? "" : prep.joined(separator: " and ") + ", then ")
            + terms.joined(separator: ", ") + ") weighted by " + (t?.weighting ?? "tfidf") + ", which TFLite's builtin operators "
            + "cannot compute from a string; the Task Library's NLClassifier input (int32 ids of the tokens its RegexTokenizer "
            + "splits off, looked up in a vocabulary file) would not give the same terms: a delimiter regex is not mltool's "
            + "tokenizer and a token lookup forms no n-grams. Run text models with `mltool predict`, or export an image model"
    }
}
