import Foundation
import MLToolCore
import MLToolEngine
import MLToolFormat

extension CLI {
    static let info = CommandSpec(
        name: "info", abstract: "Show a model's task, inputs, outputs, preprocessing, labels and sizes.",
        arguments: "MODEL",
        options: [OptionSpec("--json", help: "Print one JSON object instead of text.")]
    ) { args in
        guard args.positionals.count == 1 else {
            throw CLIError.usage(command: "info", message: "expected one MODEL, got \(args.positionals.count)")
        }
        let path = args.positionals[0]
        let model = try ModelLoading.load(path)
        let layout = (try? FileKind.detect(path: path)) == .mltool ? try ModelFile.layout(path: path) : nil
        let summary = ModelSummary(model: model, layout: layout)
        if args.has("--json") {
            print(try summary.json())
        } else {
            print(summary.text(path: path), terminator: "")
        }
    }
}

/// What `info` shows, shared by its text and JSON forms.
struct ModelSummary: Encodable {
    struct IO: Encodable { var name: String; var shape: [Int] }
    struct Section: Encodable { var name: String; var offset: Int; var bytes: Int }
    var task: String
    var name: String?
    var inputs: [IO]
    var outputs: [IO]
    var outputKind: String?
    var featureTensor: String?
    var preprocessing: ImagePreprocessing?
    var text: TextConfig?
    var labelCount: Int
    var labels: [String]
    var parameters: Int
    var tensors: Int
    var bytesPerDType: [String: Int]
    var sections: [Section]
    var fileBytes: Int?
    var provenance: Provenance
    var metrics: [String: Double]
    var holdoutItems: Int?
    /// Text models: vocabulary size (or hashed buckets) and the strongest features of each class.
    var textFeatures: Int?
    var strongestFeatures: [String: [String]]?

    init(model: Model, layout: FileLayout?) {
        let md = model.metadata
        task = md.task.rawValue
        name = md.name
        inputs = md.graph?.inputs.map { IO(name: $0.name, shape: $0.shape) } ?? []
        outputs = md.graph.map { g in
            let shapes = ModelSummary.outputShapes(model)
            return g.outputs.map { IO(name: $0, shape: shapes[$0] ?? []) }
        } ?? []
        outputKind = md.outputKind
        featureTensor = md.featureTensor
        preprocessing = md.image
        text = md.text
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
    static func outputShapes(_ model: Model) -> [String: [Int]] {
        (try? Engine.outputShapes(model: model, batch: 1)) ?? [:]
    }

    func json() throws -> String {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        return String(decoding: try e.encode(self), as: UTF8.self)
    }

    func text(path: String) -> String {
        var s = "\(path)\n"
        s += "  task          \(task)\(name.map { " (\($0))" } ?? "")\n"
        for i in inputs { s += "  input         \(i.name) \(i.shape)\n" }
        for (i, o) in outputs.enumerated() {
            s += "  output        \(o.name) \(o.shape)\(i == 0 ? outputKind.map { " (\($0))" } ?? "" : "")\n"
        }
        if let f = featureTensor { s += "  features      \(f)\n" }
        if let p = preprocessing {
            s += "  preprocessing \(p.width)×\(p.height) \(p.colorOrder), value = (pixel·\(p.scale) + \(p.bias) − \(p.mean)) / \(p.std)\n"
            s += "                resize \(p.resize)\(p.resizeTo.map { " \($0)" } ?? ""), crop \(p.crop)\n"
        }
        if let t = text {
            s += "  text          word n-grams \(t.wordNgrams)\(t.charNgrams.map { ", char n-grams \($0)" } ?? ""), \(t.weighting)\(t.hashBits.map { ", hashed 2^\($0)" } ?? "")\n"
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
