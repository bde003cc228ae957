import CCoreMLProto
import CProtobufC
import Foundation
import MLToolCore

/// Imports a Core ML model: a `.mlmodel` specification (NeuralNetwork, NeuralNetworkClassifier /
/// NeuralNetworkRegressor, spec versions 1–6, or a pipeline of them) or an `.mlpackage` directory (an ML Program with
/// its weight file, or any of the former).
///
/// Layers and MIL ops become IR nodes through `CoreMLGraph` (channel-first → NHWC, weights transposed); float16
/// weights are widened, quantized ones kept as int8 / palettes where mltool's storage holds them exactly. An image
/// input's colour layout and scaler (or, in an ML Program, its leading scale and bias ops) become the model's
/// preprocessing; a classifier's class labels its labels. Every unsupported layer or op is listed in one error;
/// detector pipelines (network → NonMaximumSuppression) become detectors with a "boxes" decoder.
public enum CoreMLImporter {
    typealias Spec = CoreML__Specification__Model

    public static func importModel(path: String) throws -> Model {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw ImportError.unreadable(file: path, reason: "no such file or directory")
        }
        let package = isDirectory.boolValue ? try CoreMLPackage(path: path) : nil
        let specPath = package?.specPath ?? path
        guard let data = package?.specData ?? FileManager.default.contents(atPath: specPath) else {
            throw ImportError.unreadable(file: specPath, reason: "no such file or permission denied")
        }
        guard !data.isEmpty else { throw ImportError.malformed(file: specPath, reason: "the file is empty") }
        let spec = try ProtobufWire.unpack(data, core_ml__specification__model__descriptor, file: specPath,
                                           format: "a Core ML model specification") { core_ml__specification__model__unpack(nil, $0, $1) }
        defer { core_ml__specification__model__free_unpacked(spec, nil) }
        var importer = CoreMLModelImporter(file: specPath, package: package, source: path)
        return try importer.run(spec.pointee)
    }

    /// Model types by field number (Model.proto's `Type` oneof), so that refusals name them.
    static let modelTypes: [UInt32: String] = [
        200: "pipelineClassifier", 201: "pipelineRegressor", 202: "pipeline", 300: "glmRegressor", 301: "supportVectorRegressor",
        302: "treeEnsembleRegressor", 303: "neuralNetworkRegressor", 304: "bayesianProbitRegressor", 400: "glmClassifier",
        401: "supportVectorClassifier", 402: "treeEnsembleClassifier", 403: "neuralNetworkClassifier",
        404: "kNearestNeighborsClassifier", 500: "neuralNetwork", 501: "itemSimilarityRecommender", 502: "mlProgram",
        555: "customModel", 556: "linkedModel", 560: "classConfidenceThresholding", 600: "oneHotEncoder", 601: "imputer",
        602: "featureVectorizer", 603: "dictVectorizer", 604: "scaler", 606: "categoricalMapping", 607: "normalizer",
        609: "arrayFeatureExtractor", 610: "nonMaximumSuppression", 900: "identity", 2000: "textClassifier",
        2001: "wordTagger", 2002: "visionFeaturePrint", 2003: "soundAnalysisPreprocessing", 2004: "gazetteer",
        2005: "wordEmbedding", 2006: "audioFeaturePrint", 3000: "serializedModel",
    ]

    static func typeName(_ m: Spec) -> String {
        if m.pipelineclassifier != nil { return "pipelineClassifier" }
        if m.pipelineregressor != nil { return "pipelineRegressor" }
        if m.pipeline != nil { return "pipeline" }
        if m.neuralnetworkregressor != nil { return "neuralNetworkRegressor" }
        if m.neuralnetworkclassifier != nil { return "neuralNetworkClassifier" }
        if m.neuralnetwork != nil { return "neuralNetwork" }
        if m.mlprogram != nil { return "mlProgram" }
        if m.nonmaximumsuppression != nil { return "nonMaximumSuppression" }
        for i in 0..<Int(m.base.n_unknown_fields) {
            if let n = modelTypes[m.base.unknown_fields[i].tag] { return n }
        }
        return "(no model type)"
    }
}

/// One import: the graph being built and what the specification says about inputs, labels and preprocessing.
struct CoreMLModelImporter {
    let file: String
    let package: CoreMLPackage?
    /// The path the user gave (the package directory or the .mlmodel): provenance and the model's name.
    let source: String
    var labels: [String] = []
    var preprocessing: ImagePreprocessing?
    var probabilityOutput: String?
    /// The file's default shapes of inputs with flexible sizes (ONNX order): an image's preprocessing size.
    var defaultShapes: [String: [Int]] = [:]

    init(file: String, package: CoreMLPackage?, source: String) {
        self.file = file; self.package = package; self.source = source
    }

    mutating func run(_ spec: CoreML__Specification__Model) throws -> Model {
        guard (1...10).contains(spec.specificationversion) else {
            throw ImportError.invalid(file: file, place: "specificationVersion", expected: "1…10", actual: "\(spec.specificationversion)")
        }
        var stages = try flatten(spec)
        // A detector pipeline (network → NonMaximumSuppression): the network's two outputs become a "boxes"
        // decoder's inputs and the NMS model's settings mltool's own NMS settings (`CoreMLDetectorPipeline`).
        var detector: CoreMLDetectorPipeline?
        if let nms = stages.firstIndex(where: { $0.nonmaximumsuppression != nil }), let n = stages[nms].nonmaximumsuppression?.pointee {
            let found = CoreMLDetectorPipeline(n, stages: stages.map { CoreMLImporter.typeName($0) })
            guard nms == stages.count - 1, nms > 0 else {
                throw ImportError.invalid(file: file, place: "pipeline stage \(nms + 1) (nonMaximumSuppression)",
                                          expected: "the last stage, after the network", actual: found.summary)
            }
            detector = found
            stages.removeLast()
        }
        guard let desc = spec.description?.pointee else {
            throw ImportError.invalid(file: file, place: "description", expected: "inputs and outputs", actual: "none")
        }
        var g = CoreMLGraph(file: file, reserved: reservedNames(stages))
        var inputs: [GraphInput] = []
        var image: (name: String, color: String)?
        // A detector pipeline's optional threshold inputs override the NMS stage's thresholds in Core ML; mltool's
        // are settings of the detector (`--min-confidence`, `--iou` of import and predict), so they are not graph inputs.
        let thresholdInputs = Set([detector?.iouThresholdInput, detector?.confidenceThresholdInput].compactMap { $0 }.filter { !$0.isEmpty })
        for i in 0..<desc.n_input {
            guard let f = desc.input[i]?.pointee, !thresholdInputs.contains(cString(f.name)) else { continue }
            let (input, color) = try declare(f, in: &g, exact: exactMapping(stages))
            inputs.append(input)
            if let color, image == nil { image = (input.name, color) }
        }
        var outputs: [String] = []
        for (index, stage) in stages.enumerated() {
            outputs = try convert(stage, index: index, of: stages.count, into: &g, image: image)
        }
        var detection: DetectionConfig?
        if let d = detector {
            let (config, tensors) = try detectionOutputs(d, &g)
            try g.b.checkDetection(config, outputs: tensors, labels: d.labels, input: inputs.first?.shape ?? [])
            (detection, outputs, labels) = (config, tensors, d.labels)
        } else {
            // A classifier's graph output is its scores; otherwise the description's outputs that the graph computes.
            if let p = probabilityOutput { outputs = [p] }
            let declared = (0..<desc.n_output).compactMap { desc.output[$0]?.pointee }.map { cString($0.name) }
            if probabilityOutput == nil, !declared.isEmpty, declared.allSatisfy({ g.b.shapes[$0] != nil }) { outputs = declared }
            outputs = try outputs.map { try flattenedScores($0, &g) }
        }
        for o in outputs where g.b.shapes[o] == nil {
            throw ImportError.invalid(file: file, place: "output '\(o)'", expected: "a tensor computed by the network", actual: "undefined")
        }
        if g.b.batchFree { for i in inputs.indices where !inputs[i].shape.isEmpty { inputs[i].shape[0] = -1 } }
        return try finish(g, inputs: inputs, outputs: outputs, desc: desc, detection: detection)
    }

    /// The detection settings of a NonMaximumSuppression stage and the graph outputs they read: the network's
    /// coordinates (B, 4: centre x, centre y, width, height as fractions of the input, Core ML's and Vision's
    /// convention) and class confidences (B, C, in 0…1), each given a leading batch axis when the network leaves it
    /// out. Core ML's NMS has no box limit; mltool keeps at most 100 (NMSSettings' default) unless the file is
    /// mltool's own export, whose recorded limits `finish` restores.
    private func detectionOutputs(_ d: CoreMLDetectorPipeline, _ g: inout CoreMLGraph) throws -> (DetectionConfig, [String]) {
        let place = "pipeline stage \(d.stages.count) (nonMaximumSuppression)"
        var tensors: [String] = []
        for (name, what) in [(d.coordinatesInput, "coordinates"), (d.confidenceInput, "confidence")] {
            guard let s = g.b.shapes[name] else {
                throw ImportError.invalid(file: file, place: "\(place) \(what) input", expected: "a tensor the network computes",
                                          actual: name.isEmpty ? "no name" : "'\(name)' (undefined)")
            }
            // (B, K), or (B, K) behind axes of 1 (a classic network's (1, 1, B, K) blob; a batch of one).
            guard s.count >= 2, s.dropLast(2).allSatisfy({ $0 == 1 || ($0 < 0 && s.count == 3) }) else {
                throw ImportError.invalid(file: file, place: "\(place) \(what) '\(name)'",
                                          expected: "(boxes, K), or (boxes, K) behind axes of 1", actual: "\(s)")
            }
            if s.count == 3 { tensors.append(name); continue }
            g.label = "\(place) \(what) '\(name)'"
            let batched = g.fresh(name + ".batched")
            if s.count == 2 {
                try g.op("Unsqueeze", [name, g.ints("axes", [0])], batched)
            } else {
                try g.op("Reshape", [name, g.ints("shape", [1, s[s.count - 2], s[s.count - 1]])], batched)
            }
            tensors.append(batched)
        }
        let boxes = g.b.shapes[tensors[0]] ?? [], scores = g.b.shapes[tensors[1]] ?? []
        guard boxes.last == 4, let classes = scores.last, classes >= 1, boxes[1] < 0 || scores[1] < 0 || boxes[1] == scores[1] else {
            throw ImportError.invalid(file: file, place: place, expected: "coordinates (boxes, 4) and confidence (boxes, classes)",
                                      actual: "\(boxes) and \(scores)")
        }
        guard d.labels.isEmpty || d.labels.count == classes else {
            throw ImportError.invalid(file: file, place: "\(place) class labels", expected: "\(classes) (one per confidence column)",
                                      actual: "\(d.labels.count)")
        }
        guard (0...1).contains(d.iouThreshold), (0...1).contains(d.confidenceThreshold) else {
            throw ImportError.invalid(file: file, place: place, expected: "iouThreshold and confidenceThreshold in 0…1",
                                      actual: "\(d.iouThreshold), \(d.confidenceThreshold)")
        }
        let nms = NMSSettings(iouThreshold: Float(d.iouThreshold), confidenceThreshold: Float(d.confidenceThreshold),
                              perClass: d.perClass, maxDetections: 100)
        let config = DetectionConfig(decoder: "boxes", classCount: classes, boxEncoding: "cxcywh",
                                     boxes: BoxesOutput(tensor: tensors[0], layout: "nbk", scoresTensor: tensors[1],
                                                        scoresLayout: "nbc", normalized: true),
                                     nms: nms)
        return (config, tensors)
    }

    // MARK: stages

    /// The stages of a pipeline (nested pipelines inlined), or the model itself.
    private func flatten(_ m: CoreML__Specification__Model) throws -> [CoreML__Specification__Model] {
        let p = m.pipeline?.pointee ?? m.pipelineclassifier?.pointee.pipeline?.pointee ?? m.pipelineregressor?.pointee.pipeline?.pointee
        guard let pipeline = p else { return [m] }
        var out: [CoreML__Specification__Model] = []
        for i in 0..<pipeline.n_models {
            guard let stage = pipeline.models[i]?.pointee else { continue }
            out += try flatten(stage)
        }
        guard !out.isEmpty else { throw ImportError.invalid(file: file, place: "pipeline", expected: "at least one model", actual: "none") }
        return out
    }

    /// Whether the networks use the exact array / rank-4 image mappings (spec 4+) instead of rank-5 blobs.
    private func exactMapping(_ stages: [CoreML__Specification__Model]) -> Bool {
        for s in stages {
            if let n = s.neuralnetwork?.pointee { return n.arrayinputshapemapping == 1 || n.imageinputshapemapping == 1 }
            if let n = s.neuralnetworkclassifier?.pointee { return n.arrayinputshapemapping == 1 || n.imageinputshapemapping == 1 }
            if let n = s.neuralnetworkregressor?.pointee { return n.arrayinputshapemapping == 1 || n.imageinputshapemapping == 1 }
            if s.mlprogram != nil { return true }
        }
        return true
    }

    private func reservedNames(_ stages: [CoreML__Specification__Model]) -> Set<String> {
        var names = Set<String>()
        for s in stages {
            for l in layers(s) {
                for i in 0..<l.n_input { names.insert(cString(l.input[i])) }
                for i in 0..<l.n_output { names.insert(cString(l.output[i])) }
            }
        }
        return names
    }

    private func layers(_ s: CoreML__Specification__Model) -> [CoreMLLayers.Layer] {
        let (ptr, n): (UnsafeMutablePointer<UnsafeMutablePointer<CoreMLLayers.Layer>?>?, Int)
        if let nn = s.neuralnetwork?.pointee { (ptr, n) = (nn.layers, nn.n_layers) }
        else if let nn = s.neuralnetworkclassifier?.pointee { (ptr, n) = (nn.layers, nn.n_layers) }
        else if let nn = s.neuralnetworkregressor?.pointee { (ptr, n) = (nn.layers, nn.n_layers) }
        else { return [] }
        guard let ptr else { return [] }
        return (0..<n).compactMap { ptr[$0]?.pointee }
    }

    /// A model input as a graph input (ONNX-layout shape registered in the builder), and its colour layout when it
    /// is an image.
    private mutating func declare(_ f: CoreML__Specification__FeatureDescription, in g: inout CoreMLGraph, exact: Bool) throws -> (GraphInput, String?) {
        let name = cString(f.name)
        guard let t = f.type?.pointee else { throw ImportError.invalid(file: file, place: "input '\(name)'", expected: "a type", actual: "none") }
        if let image = t.imagetype?.pointee {
            let (h, w) = (Int(clamping: image.height), Int(clamping: image.width))
            guard h > 0, w > 0, h <= 1 << 15, w <= 1 << 15 else {
                throw ImportError.invalid(file: file, place: "input '\(name)' size", expected: "1…32768 pixels", actual: "\(w)×\(h)")
            }
            guard let color = ["gray": 10, "rgb": 20, "bgr": 30].first(where: { $0.value == image.colorspace })?.key else {
                throw ImportError.invalid(file: file, place: "input '\(name)' colour space", expected: "GRAYSCALE, RGB or BGR", actual: "\(image.colorspace)")
            }
            let flexible = try CoreMLFlexibleShape.image(image, shape: [1, color == "gray" ? 1 : 3, h, w], place: "input '\(name)'", file: file)
            g.b.shapes[name] = flexible.graphShape
            defaultShapes[name] = flexible.defaults
            return (flexible.input(name) { ["batch", "channels", "height", "width"][$0] }, color)
        }
        if let array = t.multiarraytype?.pointee {
            guard [65568, 65600, 65552, 0].contains(array.datatype) else {
                throw ImportError.invalid(file: file, place: "input '\(name)'", expected: "a float array (mltool computes in float32)", actual: "data type \(array.datatype)")
            }
            var shape = (0..<array.n_shape).map { Int(clamping: array.shape[$0]) }
            guard !shape.isEmpty, shape.allSatisfy({ $0 > 0 && $0 <= 1 << 24 }) else {
                throw ImportError.invalid(file: file, place: "input '\(name)' shape", expected: "fixed positive dimensions", actual: "\(shape)")
            }
            var flexible = try CoreMLFlexibleShape.array(array, shape: shape, place: "input '\(name)'", file: file)
            if !exact {
                // Rank-5 mapping: [C] or [C, H, W] per item.
                guard !flexible.flexible.contains(true) else {
                    throw ImportError.refused(file: file, place: "input '\(name)'", reason: "flexible shapes of a rank-5 (spec 1–3) array input")
                }
                shape = shape.count == 1 ? [1, shape[0], 1, 1] : shape.count == 3 ? [1] + shape : shape
                flexible = CoreMLFlexibleShape(defaults: shape)
            }
            g.b.shapes[name] = flexible.graphShape
            return (flexible.input(name) { $0 == 0 ? "batch" : "dim\($0)" }, nil)
        }
        throw ImportError.invalid(file: file, place: "input '\(name)'", expected: "an image or a multi-array", actual: "another feature type")
    }

    /// Converts one stage; returns the graph outputs it offers.
    private mutating func convert(_ stage: CoreML__Specification__Model, index: Int, of count: Int, into g: inout CoreMLGraph,
                                  image: (name: String, color: String)?) throws -> [String] {
        let type = CoreMLImporter.typeName(stage)
        let place = count > 1 ? "pipeline stage \(index + 1) (\(type))" : "model type"
        if let program = stage.mlprogram?.pointee {
            var reader = CoreMLProgramReader(g: g, package: package, file: file)
            let (_, outputs) = try reader.read(program, imageInput: image?.name)
            g = reader.g
            if !reader.labels.isEmpty { labels = reader.labels; probabilityOutput = reader.probabilities }
            if let image { preprocessing = makePreprocessing(image, g: g, scale: reader.imageScale ?? 1, bias: reader.imageBias) }
            return outputs
        }
        let nn: (layers: [CoreMLLayers.Layer], pre: [CoreML__Specification__NeuralNetworkPreprocessing], exact: Bool)
        func list<T>(_ p: UnsafeMutablePointer<UnsafeMutablePointer<T>?>?, _ n: Int) -> [T] { p.map { p in (0..<n).compactMap { p[$0]?.pointee } } ?? [] }
        if let n = stage.neuralnetwork?.pointee {
            nn = (layers(stage), list(n.preprocessing, n.n_preprocessing), n.arrayinputshapemapping == 1 || n.imageinputshapemapping == 1)
        } else if let n = stage.neuralnetworkclassifier?.pointee {
            nn = (layers(stage), list(n.preprocessing, n.n_preprocessing), n.arrayinputshapemapping == 1 || n.imageinputshapemapping == 1)
            if let v = n.stringclasslabels?.pointee { labels = (0..<v.n_vector).map { cString(v.vector[$0]) } }
            else if let v = n.int64classlabels?.pointee { labels = (0..<v.n_vector).map { String(v.vector[$0]) } }
            let p = cString(n.labelprobabilitylayername)
            probabilityOutput = p.isEmpty ? nn.layers.last.flatMap { $0.n_output > 0 ? cString($0.output[0]) : nil } : p
        } else if let n = stage.neuralnetworkregressor?.pointee {
            nn = (layers(stage), list(n.preprocessing, n.n_preprocessing), n.arrayinputshapemapping == 1 || n.imageinputshapemapping == 1)
        } else {
            throw ImportError.refused(file: file, place: place, reason: "\(type) models are not supported (neural networks, ML Programs and pipelines of them are)")
        }
        try CoreMLNeuralNetwork.checkSupported(nn.layers, file: file)
        if let image {
            var scale: Float = 1, bias: [Float]?
            for p in nn.pre {
                let feature = cString(p.featurename)
                guard feature.isEmpty || feature == image.name else { continue }
                if p.meanimage != nil { throw ImportError.refused(file: file, place: "preprocessing of '\(image.name)'", reason: "a mean image is not supported (an image scaler is)") }
                guard let s = p.scaler?.pointee else { continue }
                scale = s.channelscale
                bias = image.color == "gray" ? [s.graybias] : image.color == "rgb" ? [s.redbias, s.greenbias, s.bluebias] : [s.bluebias, s.greenbias, s.redbias]
            }
            if index == 0 { preprocessing = makePreprocessing(image, g: g, scale: scale, bias: bias) }
        }
        var converter = CoreMLNeuralNetwork(g: g, reader: CoreMLWeightReader(file: file), classic: !nn.exact)
        for l in nn.layers { try converter.convert(l) }
        g = converter.g
        return nn.layers.last.map { l in (0..<l.n_output).map { cString(l.output[$0]) } } ?? []
    }

    private func makePreprocessing(_ image: (name: String, color: String), g: CoreMLGraph, scale: Float, bias: [Float]?) -> ImagePreprocessing {
        let channels = image.color == "gray" ? 1 : 3
        let s = defaultShapes[image.name] ?? g.b.shapes[image.name] ?? [1, channels, 1, 1]
        var b = bias ?? [Float](repeating: 0, count: channels)
        if b.count == 1 && channels == 3 { b = [b[0], b[0], b[0]] }
        return ImagePreprocessing(height: s[2], width: s[3], colorOrder: image.color, scale: scale, bias: b,
                                  mean: [Float](repeating: 0, count: channels), std: [Float](repeating: 1, count: channels),
                                  resize: "exact", crop: "none")
    }

    /// Scores of shape (N, C, 1, 1) (classic layers keep rank 4) as (N, C).
    private func flattenedScores(_ o: String, _ g: inout CoreMLGraph) throws -> String {
        guard let s = g.b.shapes[o], s.count == 4, s[2] == 1, s[3] == 1 else { return o }
        g.label = "output '\(o)'"
        let flat = g.fresh(o + ".scores")
        try g.op("Flatten", [o], flat, ["axis": CoreMLGraph.int(1)])
        return flat
    }

    // MARK: the model

    private func finish(_ g: CoreMLGraph, inputs: [GraphInput], outputs: [String], desc: CoreML__Specification__ModelDescription,
                        detection: DetectionConfig?) throws -> Model {
        if detection == nil, !labels.isEmpty, let first = outputs.first, let classes = g.b.shapes[first]?.last, classes >= 0, classes != labels.count {
            throw ImportError.invalid(file: file, place: "class labels", expected: "\(classes) (one per score of '\(first)')", actual: "\(labels.count)")
        }
        let graph = Graph(inputs: inputs, outputs: outputs, nodes: g.b.nodes, sourceLayout: "nchw")
        let task: ModelMetadata.Task = detection != nil ? .objectDetector : labels.isEmpty ? .network : .imageClassifier
        var md = ModelMetadata(task: task, graph: graph, labels: labels,
                               provenance: Provenance(sources: [.init(path: source, sha256: try SHA256.hex(fileAt: file))]))
        var userDefined: [String: String] = [:]
        if let meta = desc.metadata?.pointee {
            func nonEmpty(_ p: UnsafeMutablePointer<CChar>?) -> String? { let s = cString(p); return s.isEmpty ? nil : s }
            md.description = nonEmpty(meta.shortdescription)
            md.author = nonEmpty(meta.author)
            md.license = nonEmpty(meta.license)
            md.version = nonEmpty(meta.versionstring)
            for i in 0..<meta.n_userdefined {
                guard let e = meta.userdefined[i]?.pointee else { continue }
                userDefined[cString(e.key)] = cString(e.value)
            }
        }
        var prep = preprocessing
        // mltool's own exports record resize and crop in userDefined.
        if var p = prep, let json = userDefined["preprocessing.json"],
           let recorded = try? JSONDecoder().decode(ImagePreprocessing.self, from: Data(json.utf8)), recorded.height == p.height, recorded.width == p.width {
            p.resize = recorded.resize; p.resizeTo = recorded.resizeTo; p.crop = recorded.crop
            prep = p
        }
        md.name = userDefined["name"] ?? ((source as NSString).lastPathComponent as NSString).deletingPathExtension
        md.description = md.description ?? "imported from Core ML"
        md.image = prep
        // Scores flattened from (N, C, 1, 1) are probabilities when a softmax made them.
        var last = g.b.nodes.last { $0.outputs.contains(outputs.first ?? "") }
        while let n = last, [.flatten, .reshape, .identity].contains(n.op), let x = n.inputs.first {
            last = g.b.nodes.last { $0.outputs.contains(x) }
        }
        md.outputKind = detection != nil ? nil : last?.op == .softmax ? "probabilities" : "logits"
        md.detection = detection
        // mltool's own export records the detector's settings: Core ML's NMS has no box limits, these keep them.
        if let json = userDefined["detection"], let recorded = try? JSONDecoder().decode(DetectionConfig.self, from: Data(json.utf8)) {
            md.detection?.nms.maxDetections = recorded.nms.maxDetections
            md.detection?.nms.maxPerClass = recorded.nms.maxPerClass
        }
        let tensors = g.b.weightOrder.compactMap { name -> StoredTensor? in
            guard let w = g.b.weights[name] else { return nil }
            return ONNXImporter.storedTensor(name, shape: w.shape, values: w.values, quant: w.quant)
        }
        var model = try GraphPasses.optimize(Model(metadata: md, tensors: tensors))
        model.metadata.graph?.outputs = outputs
        let used = Set(model.metadata.graph?.nodes.flatMap(\.inputs) ?? [])
        model.tensors = model.tensors.filter { used.contains($0.name) }
        return model
    }
}

func cString(_ p: UnsafeMutablePointer<CChar>?) -> String {
    guard let p else { return "" }
    return String(cString: p)
}
