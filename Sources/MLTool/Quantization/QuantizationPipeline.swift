import Foundation
import MLToolCore
import MLToolData
import MLToolEval
import MLToolFormat
import MLToolQuant

/// How a model is compressed. These defaults are the only ones: `mltool quantize` reads them from here.
public struct QuantizationParameters: Sendable {
    /// Linear (int8), palette (k-means look-up tables of 1, 2, 4, 6 or 8 bits) or fp16.
    public var mode: QuantizeOptions.Mode = .linear
    public var bits = 8
    /// Linear: one scale per tensor instead of per output channel.
    public var perTensor = false
    /// Linear: min/max range with a zero point instead of symmetric.
    public var asymmetric = false
    /// Palette: one look-up table per this many output channels (nil: per tensor, with per-channel scales).
    public var groupSize: Int?
    /// Palette: true, tables of integers in −127…127, their step in the channel scales (Core ML's int8 look-up
    /// table): such layers run on the int8 kernels, as int8 models do; false, float tables (Core ML's float look-up
    /// table, computed in float); nil: int8 tables wherever the palette has per-channel scales
    /// (`QuantizeOptions.usesInt8Table`).
    public var int8Table: Bool?
    /// Tensors smaller than this stay float.
    public var minElements = 2048
    /// The accuracy gate: the largest drop allowed, in percentage points (nil: report only).
    public var maxDrop: Double?
    /// Palettes: raise the most sensitive tensors while the file stays at most this % of the float model's.
    public var maxSize: Double?
    /// Evaluate on this data (a label-folder tree or a table) instead of the recorded holdout.
    public var data: String?
    /// Calibration images (default: `data`, else the recorded holdout).
    public var calibration: String?
    /// Calibration images used, spread over the calibration data.
    public var calibrationCount = 32
    /// Calibrate (bias correction, and GPTQ-style error feedback for palettes). Off: float biases, plain palettes.
    public var biasCorrection = true
    /// Measure the accuracy of both models (the gate needs it).
    public var evaluate = true
    /// k-means seed.
    public var seed: UInt64 = 42
    /// Threads (0: all cores).
    public var threads = 0

    public init() {}

    /// Parameters for `bits` (and an explicit `mode`, when given): 16 means fp16, 8 linear, fewer bits palettes.
    public init(bits: Int?, mode: QuantizeOptions.Mode?) {
        var b = bits ?? (mode == .fp16 ? 16 : 8)
        let m = mode ?? (b == 16 ? .fp16 : (b == 8 ? .linear : .palette))
        if m == .fp16 { b = 16 }
        self.mode = m
        self.bits = b
    }

    /// The file name suffix of the output ("int8", "fp16", "pal4").
    public var suffix: String { mode == .fp16 ? "fp16" : (mode == .linear ? "int\(bits)" : "pal\(bits)") }

    /// `model.bin` → `model.int8.bin` (never the input's own name).
    public func defaultOutput(for path: String) -> String {
        (path.hasSuffix(".bin") ? String(path.dropLast(4)) : path) + ".\(suffix).bin"
    }
}

/// What quantization did, tensor by tensor, and what the gate measured.
public struct QuantizeReport: Encodable, Sendable {
    public var model: String
    public var output: String
    public var mode: String
    public var bits: Int
    /// Palettes: what their look-up tables hold, "int8" or "float" (nil for other modes).
    public var table: String?
    public var tensors: [TensorQuantReport]
    public var fileBytesBefore: Int
    public var fileBytesAfter: Int
    public var calibration: String?
    public var mixedPrecision: String?
    public var gate: GateResult?
    public var seconds: Double
}

/// The gate's verdict: both models on the same items — accuracy for classifiers, mAP@0.5 for object detectors.
public struct GateResult: Encodable, Sendable {
    /// What `floatAccuracy` and `quantizedAccuracy` measure: "accuracy" or "mAP@0.5".
    public var metric = "accuracy"
    public var items: Int
    /// Evaluation items used for calibration and so left out of the gate.
    public var calibrationLeftOut: Int
    public var floatAccuracy: Double
    public var quantizedAccuracy: Double
    /// Classifiers: top-1 agreement and mean KL divergence of the two models' probabilities.
    public var agreement: Double?
    public var meanKL: Double?
    /// Detectors: mAP@0.5:0.95 of both models.
    public var floatMAP50to95: Double?
    public var quantizedMAP50to95: Double?
    public var backedOff: [String]
    public var backOffOrder: String?

    /// The metric lost, in percentage points.
    public var drop: Double { (floatAccuracy - quantizedAccuracy) * 100 }
}

/// Compresses a model's weights and reports what it cost (coremltools' `linear_quantize_weights` /
/// `palettize_weights`, with the evaluation they leave to the user done here). Stages: load → items (recorded
/// holdout or `data`) → calibrate (bias correction, error feedback) → compress → size budget (`maxSize`) →
/// accuracy gate (`maxDrop`: back off the most sensitive tensors until the drop fits) → report.
public struct QuantizationPipeline: Sendable {
    public var modelPath: String
    /// Where the result will be written (named in the report); `QuantizationOutcome.write` writes it.
    public var output: String
    public var parameters: QuantizationParameters

    public init(modelPath: String, output: String? = nil, parameters: QuantizationParameters = .init()) {
        self.modelPath = modelPath
        self.output = output ?? parameters.defaultOutput(for: modelPath)
        self.parameters = parameters
    }

    /// The quantized model and its report.
    public struct Outcome: Sendable {
        public var model: Model
        public var report: QuantizeReport
        /// Writes the quantized model (never over the float model).
        public func write(to path: String? = nil) throws {
            try ModelFile.write(model, to: path ?? report.output, inputs: [report.model])
        }
    }

    public func run(progress: ((PipelineEvent) -> Void)? = nil) throws -> Outcome {
        let p = parameters, path = modelPath, out = output
        let emit = progress ?? { _ in }
        let mode = p.mode, bits = p.bits
        var options = QuantizeOptions(mode: mode, bits: bits, perTensor: p.perTensor, asymmetric: p.asymmetric,
                                      groupSize: p.groupSize, minElements: p.minElements, seed: p.seed)
        options.int8Table = p.int8Table
        let model = try ModelLoader.load(path)
        let threads = p.threads
        let started = Date()
        let isImage = model.metadata.image != nil && model.metadata.graph != nil
        let isDetector = DetectorEvaluator.isDetector(model)
        // A word tagger is gated on token accuracy over tagged sentences (`data`: CoNLL-U, CoNLL or JSON).
        let sentences = try model.metadata.task == .wordTagger ? p.data.map { try TaggedCorpus.load($0) } : nil
        // The evaluation items: `data`, else the recorded holdout; a detector's with their boxes.
        var photos: [AnnotatedImage]?
        if isDetector {
            photos = try p.data.map { try DetectionDataset.load($0).images }
                ?? (model.metadata.split?.holdout.isEmpty == false ? try DetectorEvaluator.recordedHoldout(model, modelPath: path, skipMissing: !p.evaluate).photos : nil)
        }
        var items: [LabeledItem]? = isDetector ? photos.map { $0.map { LabeledItem(path: $0.path, label: "") } }
            : model.metadata.task == .wordTagger ? nil
            : try p.data.map { try Evaluation.loadItems($0, task: model.metadata.task) }
            ?? (p.evaluate && model.metadata.split?.holdout.isEmpty == false
                ? try Evaluation.recordedHoldout(model, modelPath: path, skipMissing: false).items : nil)

        // Calibration (image models; fp16 needs none): bias correction, and error feedback for palettes.
        var calibration: QuantizeCalibration?
        if isImage && mode != .fp16 && p.biasCorrection {
            let count = p.calibrationCount
            guard count >= 1 else {
                throw PipelineError.invalidParameter(name: "calibrationCount", reason: "--calibration-count must be ≥ 1")
            }
            // Without evaluation (--no-eval) the recorded holdout is not read: it is the test split when the model
            // was trained with --test, which `mltool eval` scores later with no calibration image left out. Such a
            // model is calibrated on --calibration (e.g. its training images) or not at all.
            let source: (String, [LabeledItem])? = try p.calibration.map {
                ($0, isDetector ? try DetectionDataset.load($0).images.map { LabeledItem(path: $0.path, label: "") }
                     : try Evaluation.loadItems($0, task: model.metadata.task))
            }
                ?? items.map { (p.data != nil ? "--data" : "holdout", $0) }
            // Drawn from the evaluated items: at most half of them, so that the gate keeps the rest.
            let fromEvaluated = p.calibration == nil && items != nil
            let useCount = fromEvaluated && (items?.count ?? 0) >= 2 ? min(count, (items?.count ?? 0) / 2) : count
            if let (name, calItems) = source, !calItems.isEmpty {
                calibration = try QuantizeCalibration(model: model, modelPath: path, items: calItems, count: useCount,
                                                      source: name, threads: threads)
            } else {
                emit(.note("no calibration images (no holdout, --data or --calibration): no bias correction or error feedback"))
            }
        }
        // Calibration images drawn from the evaluation items are left out of the gate, which then scores only
        // images the compression never saw.
        var calibrationLeftOut = 0
        if let calibration, p.calibration == nil, let all = items {
            let kept = all.filter { !calibration.paths.contains($0.path) }
            if !kept.isEmpty {
                items = kept
                photos = photos?.filter { !calibration.paths.contains($0.path) }
                calibrationLeftOut = all.count - kept.count
            }
        }
        var corrected = 0
        if let calibration, mode == .palette {
            options.errorFeedback = calibration.errorFeedbackFactors()
        }
        func compress(_ options: QuantizeOptions) throws -> (Model, [TensorQuantReport]) {
            var (q, r) = try Quantizer.quantize(model, options)
            if let calibration { corrected = try calibration.correctBiases(original: model, quantized: &q) }
            return (q, r)
        }
        var (quantized, reports) = try compress(options)

        // The searches (MLToolQuant.QuantizationSearch) ask this pipeline about candidate models.
        let classes = model.metadata.labels.count
        var measure: (Model) throws -> GateResult = { _ in throw PipelineError.badInput(file: path, reason: "no evaluation items") }
        let judge = PipelineJudge(
            compressBody: compress,
            sensitivitySource: calibration?.source,
            sensitivityBody: { quantized, tensors in
                guard let calibration else { return [:] }
                if isDetector { return try calibration.outputChange(original: model, quantized: quantized, tensors: tensors) }
                return try calibration.sensitivity(original: model, quantized: quantized, tensors: tensors, modelPath: path,
                                                   classes: classes)
            },
            verdictBody: { try measure($0) },
            emit: emit, output: out)

        // Mixed precision within a size budget: raise the most sensitive tensors per byte while the file fits.
        var raised: String?
        let floatFileBytes = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        if let maxSize = p.maxSize {
            guard mode == .palette, calibration != nil, !model.metadata.labels.isEmpty else {
                throw PipelineError.invalidParameter(name: "maxSize", reason: "--max-size needs a palette mode and calibration images of a classifier")
            }
            let budget = Int(Double(floatFileBytes) * maxSize / 100)
            let size = try judge.fileBytes(quantized)
            if size < budget {
                let start = QuantizationSearch.State(model: quantized, reports: reports, options: options)
                let (state, levels) = try QuantizationSearch.fillBudget(start, size: size, budget: budget, judge: judge)
                if !levels.isEmpty {
                    (quantized, reports, options) = (state.model, state.reports, state.options)
                    raised = "\(levels.count) tensors raised within \(String(format: "%g", maxSize))% (most sensitive per byte first): "
                        + levels.sorted { $0.key < $1.key }.map { "\($0.key) → \($0.value) bits" }.joined(separator: ", ")
                }
            } else {
                emit(.status(String(format: "size budget: the file is already %.1f%% > --max-size %g%%; nothing raised",
                                    Double(size) / Double(max(floatFileBytes, 1)) * 100, maxSize)))
            }
        }

        /// `maxDrop`: backs off the most sensitive tensors until the drop fits.
        func gated(_ first: GateResult) throws -> GateResult {
            var result = first
            guard let maxDrop = p.maxDrop else { return result }
            let start = QuantizationSearch.State(model: quantized, reports: reports, options: options)
            let b: QuantizationSearch.BackOff<GateResult>
            do {
                b = try QuantizationSearch.backOff(start, verdict: result, maxDrop: maxDrop, judge: judge)
            } catch let e as QuantError {
                throw PipelineError.badInput(file: path, reason: e.description)
            }
            (quantized, reports, options) = (b.state.model, b.state.reports, b.state.options)
            result = b.verdict
            result.backedOff = b.backedOff
            result.backOffOrder = b.backedOff.isEmpty ? nil : b.order
            return result
        }
        // The gate: mAP@0.5 for a detector, token accuracy for a word tagger, accuracy for a classifier.
        var gate: GateResult?
        if p.evaluate, let sentences {
            let float = try WordTagger(model: model, file: path).evaluate(sentences).report.accuracy
            measure = { m in
                let q = try WordTagger(model: m, file: out).evaluate(sentences).report.accuracy
                return GateResult(metric: "token accuracy", items: sentences.tokenCount, calibrationLeftOut: 0,
                                  floatAccuracy: float, quantizedAccuracy: q, agreement: nil, meanKL: nil,
                                  floatMAP50to95: nil, quantizedMAP50to95: nil, backedOff: [], backOffOrder: nil)
            }
            gate = try gated(try measure(quantized))
        } else if p.evaluate, isDetector, let photos, !photos.isEmpty {
            var e = DetectorEvaluator.Parameters()
            e.threads = threads
            func evaluate(_ m: Model) throws -> DetectionEvaluation {
                try DetectorEvaluator.evaluate(model: m, photos: photos, parameters: e, emit: emit).0
            }
            let float = try evaluate(model)
            measure = { m in
                let q = try evaluate(m)
                return GateResult(metric: "mAP@0.5", items: photos.count, calibrationLeftOut: calibrationLeftOut,
                                  floatAccuracy: float.mAP50, quantizedAccuracy: q.mAP50, agreement: nil, meanKL: nil,
                                  floatMAP50to95: float.mAP50to95, quantizedMAP50to95: q.mAP50to95, backedOff: [], backOffOrder: nil)
            }
            gate = try gated(try measure(quantized))
        } else if p.evaluate {
            if let items, !model.metadata.labels.isEmpty {
                let truth = try Evaluation.truth(items, labels: model.metadata.labels, modelPath: path)
                func probabilities(_ m: Model, _ name: String) throws -> [Float] {
                    defer { emit(.progressFinished(label: "evaluating")) }
                    return try Evaluation.probabilities(m, modelPath: name, items: items, threads: threads, progress: { n, total in
                        emit(.progress(label: "evaluating", advanced: n, total: total))
                    })
                }
                let floatProbs = try probabilities(model, path)
                let floatAcc = Metrics.evaluate(truth: truth, probabilities: floatProbs, labels: model.metadata.labels).accuracy
                measure = { m in
                    let pr = try probabilities(m, out)
                    let r = Metrics.evaluate(truth: truth, probabilities: pr, labels: model.metadata.labels)
                    let c = ModelComparison.compare(floatProbs, pr, classes: classes)
                    return GateResult(metric: "accuracy", items: items.count, calibrationLeftOut: calibrationLeftOut,
                                      floatAccuracy: floatAcc, quantizedAccuracy: r.accuracy,
                                      agreement: c.agreement, meanKL: c.meanKL, floatMAP50to95: nil, quantizedMAP50to95: nil,
                                      backedOff: [], backOffOrder: nil)
                }
                gate = try gated(try measure(quantized))
            } else {
                emit(.note("no recorded holdout and no --data: weights compressed without an accuracy check"))
            }
        }
        let report = QuantizeReport(model: path, output: out, mode: mode.rawValue, bits: bits,
                                    table: mode == .palette ? (options.usesInt8Table ? "int8" : "float") : nil, tensors: reports,
                                    fileBytesBefore: floatFileBytes, fileBytesAfter: try judge.fileBytes(quantized),
                                    calibration: calibration.map {
                                        let fed = reports.filter { $0.mode.hasSuffix("+gptq") }.count
                                        return "\($0.source): \(corrected) biases corrected"
                                            + (fed > 0 ? ", error feedback (GPTQ) on \(fed) tensors" : "")
                                    }, mixedPrecision: raised, gate: gate,
                                    seconds: Date().timeIntervalSince(started))
        return Outcome(model: quantized, report: report)
    }
}

/// The quantize pipeline's answers to `QuantizationSearch`: compress with bias correction, measure sensitivity on
/// the calibration images and accuracy on the evaluation items.
private struct PipelineJudge: QuantizationJudge {
    let compressBody: (QuantizeOptions) throws -> (Model, [TensorQuantReport])
    let sensitivitySource: String?
    let sensitivityBody: (Model, [String]) throws -> [String: Double]
    let verdictBody: (Model) throws -> GateResult
    let emit: (PipelineEvent) -> Void
    let output: String

    func compress(_ options: QuantizeOptions) throws -> (Model, [TensorQuantReport]) { try compressBody(options) }
    /// The size of the file `model` makes at the output path (what `Outcome.write` writes).
    func fileBytes(_ model: Model) throws -> Int { try ModelFile.serialize(model, asWrittenTo: output).count }
    func sensitivity(_ quantized: Model, tensors: [String]) throws -> [String: Double] { try sensitivityBody(quantized, tensors) }
    func verdict(_ model: Model) throws -> GateResult { try verdictBody(model) }
    func drop(_ verdict: GateResult) -> Double { verdict.drop }
    func status(_ message: String) { emit(.status(message)) }
}
