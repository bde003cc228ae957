import Foundation
import MLToolCore
import MLToolEngine
import MLToolFormat

/// What a model is, in one value (`mltool info` prints it): task, inputs and outputs with their shapes,
/// preprocessing, labels, sizes per dtype and per file section, provenance and recorded metrics.
public struct ModelSummary: Encodable, Sendable {
    public struct IO: Encodable, Sendable {
        public var name: String
        public var shape: [Int]
        /// The source's names of free dimensions ("" for the others); nil when it names none.
        public var dimensionNames: [String]? = nil
        /// The source's bounds of each dimension ([min, max], max −1 unbounded) and the shapes it enumerates.
        public var dimensionRanges: [[Int]]? = nil
        public var enumeratedShapes: [[Int]]? = nil

        /// The shape as `info` prints it: a free dimension by its name where it has one, else -1, followed by its
        /// bounds ("length 2…32") or the sizes the source enumerates for it ("height 32|48|64").
        public var shapeText: String {
            let names = dimensionNames ?? []
            let dims = shape.enumerated().map { k, size -> String in
                guard size < 0 else { return "\(size)" }
                var text = k < names.count && !names[k].isEmpty ? names[k] : "\(size)"
                if let ranges = dimensionRanges, k < ranges.count, case let r = ranges[k], r.count == 2, r != [0, -1] { text += " \(r[0])…\(r[1] < 0 ? "∞" : String(r[1]))" }
                let listed = (enumeratedShapes ?? []).compactMap { k < $0.count && $0[k] >= 0 ? $0[k] : nil }
                if !listed.isEmpty { text += " " + listed.map(String.init).joined(separator: "|") }
                return text
            }
            return "[" + dims.joined(separator: ", ") + "]"
        }
    }
    public struct Section: Encodable, Sendable { public var name: String; public var offset: Int; public var bytes: Int }
    public var task: String
    public var name: String?
    public var inputs: [IO]
    public var outputs: [IO]
    public var outputKind: String?
    public var featureTensor: String?
    public var preprocessing: ImagePreprocessing?
    public var text: TextConfig?
    /// Object detectors: the decoder and NMS settings (docs/FORMAT.md 4.4).
    public var detection: DetectionConfig?
    public var labelCount: Int
    public var labels: [String]
    public var parameters: Int
    public var tensors: Int
    public var bytesPerDType: [String: Int]
    public var sections: [Section]
    public var fileBytes: Int?
    public var provenance: Provenance
    public var metrics: [String: Double]
    public var holdoutItems: Int?
    /// Text models: vocabulary size (or hashed buckets) and the strongest features of each class.
    public var textFeatures: Int?
    public var strongestFeatures: [String: [String]]?

    /// The summary of the model file at `path` (its section layout when it is a native file).
    public init(path: String) throws {
        let model = try ModelLoader.load(path)
        let layout = (try? FileKind.detect(path: path)) == .mltool ? try ModelFile.layout(path: path) : nil
        self.init(model: model, layout: layout)
    }

    public init(model: Model, layout: FileLayout?) {
        let md = model.metadata
        task = md.task.rawValue
        name = md.name
        inputs = md.graph?.inputs.map {
            IO(name: $0.name, shape: $0.shape, dimensionNames: $0.dimensionNames, dimensionRanges: $0.dimensionRanges,
               enumeratedShapes: $0.enumeratedShapes)
        } ?? []
        outputs = md.graph.map { g in
            let shapes = ModelSummary.outputShapes(model)
            return g.outputs.map { IO(name: $0, shape: shapes[$0] ?? []) }
        } ?? []
        // A text classifier's graph is its sentence encoder: the probabilities are not that graph's output.
        outputKind = md.task == .textClassifier && md.graph != nil ? nil : md.outputKind
        featureTensor = md.featureTensor
        preprocessing = md.image
        text = md.text
        detection = md.detection
        labelCount = md.labels.count
        labels = md.labels
        parameters = model.parameterCount
        tensors = model.tensors.count
        var perDType = [String: Int]()
        for t in model.tensors { perDType[t.dtype.name, default: 0] += t.bytes.count }
        bytesPerDType = perDType
        sections = layout?.sections.map { Section(name: $0.name, offset: $0.offset, bytes: $0.length) } ?? []
        fileBytes = layout?.fileSize
        provenance = md.provenance
        metrics = md.metrics
        holdoutItems = md.split?.holdout.count
        if md.task == .textClassifier, let c = try? TextClassifier(model: model, path: md.name ?? "model") {
            textFeatures = c.vectorizer.featureCount
            strongestFeatures = Dictionary(uniqueKeysWithValues: zip(c.labels, c.strongestFeatures(5).map { $0.map(\.feature) }))
        }
    }

    /// Output shapes for a batch of one, by shape inference (empty when the graph does not check out).
    public static func outputShapes(_ model: Model) -> [String: [Int]] {
        (try? Engine.outputShapes(model: model, batch: 1)) ?? [:]
    }

    public func json() throws -> String {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        return String(decoding: try e.encode(self), as: UTF8.self)
    }

    public func text(path: String) -> String {
        var s = "\(path)\n"
        s += "  task          \(task)\(name.map { " (\($0))" } ?? "")\n"
        for i in inputs { s += "  input         \(i.name) \(i.shapeText)\n" }
        for (i, o) in outputs.enumerated() {
            s += "  output        \(o.name) \(o.shape)\(i == 0 ? outputKind.map { " (\($0))" } ?? "" : "")\n"
        }
        if let f = featureTensor { s += "  features      \(f)\n" }
        if let p = preprocessing {
            s += "  preprocessing \(p.width)×\(p.height) \(p.colorOrder), value = (pixel·\(p.scale) + \(p.bias) − \(p.mean)) / \(p.std)\n"
            s += "                resize \(p.resize)\(p.resizeTo.map { " \($0)" } ?? ""), crop \(p.crop)\(p.padValue.map { ", pad \($0)" } ?? "")\n"
        }
        if let d = detection {
            let strides = d.heads.map { ", strides \($0.map(\.stride))" } ?? ""
            s += "  detection     \(d.decoder) (\(d.boxEncoding)), \(d.classCount) classes\(strides)\(d.regMax.map { ", regMax \($0)" } ?? "")\n"
            let n = d.nms
            s += "  nms           IoU \(n.iouThreshold), confidence \(n.confidenceThreshold), \(n.perClass ? "per class" : "across classes"), "
                + "at most \(n.maxDetections)\n"
        }
        if let t = text {
            s += "  text          word n-grams \(t.wordNgrams)\(t.charNgrams.map { ", char n-grams \($0)" } ?? ""), \(t.weighting)\(t.hashBits.map { ", hashed 2^\($0)" } ?? "")\(t.embeddingMeanTensor == nil ? "" : " + sentence embeddings (the encoder above)")\n"
        }
        if let n = textFeatures { s += "  vocabulary    \(n) \(text?.hashBits == nil ? "terms" : "hashed buckets")\n" }
        for label in labels { if let f = strongestFeatures?[label] { s += "  strongest     \(label): \(f.joined(separator: ", "))\n" } }
        if labelCount > 0 {
            let first = labels.prefix(5).map { "\"\($0)\"" }.joined(separator: ", ")
            s += "  labels        \(labelCount): \(first)\(labelCount > 5 ? ", …" : "")\n"
        }
        s += "  parameters    \(parameters) in \(tensors) tensors\n"
        for (d, b) in bytesPerDType.sorted(by: { $0.key < $1.key }) {
            s += "  \(d.padding(toLength: 14, withPad: " ", startingAt: 0))\(b) bytes\n"
        }
        for sec in sections { s += "  section       \(sec.name): \(sec.bytes) bytes at \(sec.offset)\n" }
        if let f = fileBytes { s += "  file          \(f) bytes\n" }
        s += "  tool          mltool \(provenance.toolVersion)\(provenance.seed.map { ", seed \($0)" } ?? "")\n"
        for src in provenance.sources { s += "  source        \(src.path) sha256 \(src.sha256.prefix(16))…\n" }
        for (k, v) in metrics.sorted(by: { $0.key < $1.key }) { s += "  metric        \(k) = \(String(format: "%.4f", v))\n" }
        if let h = holdoutItems { s += "  holdout       \(h) items recorded\n" }
        return s
    }
}
