import Foundation
import MLToolCore
import MLToolData
import MLToolEval
import MLToolQuant

/// One run of `QuantizationPipeline`: its stages as methods over the state they share (the model as compressed so
/// far, its per-tensor reports and options, the calibration, the evaluation items).
final class QuantizationRun {
    let p: QuantizationParameters
    let path: String, out: String
    let emit: (PipelineEvent) -> Void
    let model: Model
    let started = Date()
    let isImage: Bool, isDetector: Bool
    var options: QuantizeOptions
    var quantized: Model
    var reports: [TensorQuantReport] = []
    /// Evaluation items: a word tagger's sentences, a detector's photos (with boxes), a classifier's items.
    var sentences: TaggedCorpus?
    var photos: [AnnotatedImage]?
    var items: [LabeledItem]?
    var calibration: QuantizeCalibration?
    var calibrationLeftOut = 0
    var corrected = 0
    /// The gate's measurement of a candidate (set by `gate`; the searches ask it through the judge).
    var measure: (Model) throws -> GateResult
    private(set) lazy var judge = makeJudge()

    init(_ pipeline: QuantizationPipeline, emit: @escaping (PipelineEvent) -> Void) throws {
        p = pipeline.parameters; path = pipeline.modelPath; out = pipeline.output; self.emit = emit
        options = QuantizeOptions(mode: p.mode, bits: p.bits, perTensor: p.perTensor, asymmetric: p.asymmetric,
                                  groupSize: p.groupSize, minElements: p.minElements, seed: p.seed)
        options.int8Table = p.int8Table
        model = try ModelLoader.load(path)
        if let why = TaskRegistry.standard.handling(model: model).quantizationRefusal(model: model) {
            throw PipelineError.badInput(file: path, reason: why)
        }
        quantized = model
        isImage = model.metadata.image != nil && model.metadata.graph != nil
        isDetector = DetectorEvaluator.isDetector(model)
        let file = path
        measure = { _ in throw PipelineError.badInput(file: file, reason: "no evaluation items") }
    }

    /// The evaluation items: `data`, else the recorded holdout; a detector's with their boxes; a word tagger is gated
    /// on token accuracy over tagged sentences (`data`: CoNLL-U, CoNLL or JSON).
    func loadEvaluationItems() throws {
        let task = model.metadata.task
        sentences = try task == .wordTagger ? p.data.map { try TaggedCorpus.load($0) } : nil
        if isDetector {
            photos = try p.data.map { try DetectionDataset.load($0).images }
                ?? (p.evaluate && model.metadata.split?.holdout.isEmpty == false
                    ? try DetectorEvaluator.recordedHoldout(model, modelPath: path, skipMissing: false).photos : nil)
        }
        items = isDetector ? photos.map { $0.map { LabeledItem(path: $0.path, label: "") } }
            : task == .wordTagger ? nil
            : try p.data.map { try Evaluation.loadItems($0, task: task) }
            ?? (p.evaluate && model.metadata.split?.holdout.isEmpty == false
                ? try Evaluation.recordedHoldout(model, modelPath: path, skipMissing: false).items : nil)
    }

    /// Calibration (image models; fp16 needs none): bias correction, and error feedback for palettes.
    func calibrate() throws {
        guard isImage && p.mode != .fp16 && p.biasCorrection else { return }
        guard p.calibrationCount >= 1 else {
            throw PipelineError.invalidParameter(name: "calibrationCount", reason: "--calibration-count must be ≥ 1")
        }
        guard let (name, calItems) = try calibrationSource(), !calItems.isEmpty else {
            emit(.note("no calibration images: \(path) records no training images for it; give --calibration DATA "
                       + "(e.g. the training images) for bias correction and error feedback"))
            return
        }
        calibration = try QuantizeCalibration(model: model, modelPath: path, items: calItems, count: p.calibrationCount,
                                              source: name, threads: p.threads)
    }

    /// `--calibration`, else the training images the model records for calibration (docs/FORMAT.md, SplitManifest);
    /// never the evaluated items, which are the test split (or the user's test data).
    func calibrationSource() throws -> (String, [LabeledItem])? {
        if let data = p.calibration {
            return (data, isDetector ? try DetectionDataset.load(data).images.map { LabeledItem(path: $0.path, label: "") }
                        : try Evaluation.loadItems(data, task: model.metadata.task))
        }
        guard let split = model.metadata.split, let recorded = split.calibration, !recorded.isEmpty else { return nil }
        let resolver = HoldoutResolver(root: split.root)
        var items = [LabeledItem](), problems = [String]()
        for item in recorded {
            switch try resolver.resolve(item) {
            case .item(let resolved): items.append(resolved)
            case .problem(let problem): problems.append(problem)
            }
        }
        if let first = problems.first {
            emit(.note("\(problems.count) of the \(recorded.count) training images \(path) records for calibration cannot "
                       + "be used (\(first)); calibrating on the other \(items.count)"))
        }
        return ("training", items)
    }

    /// Evaluated items that are also calibration images (`--calibration` naming the evaluated data) are left out of
    /// the gate, which then scores only images the compression never saw.
    func leaveCalibrationOut() {
        guard let calibration, let all = items else { return }
        let kept = all.filter { !calibration.paths.contains($0.path) }
        guard kept.count < all.count else { return }
        guard !kept.isEmpty else {
            emit(.note("every evaluated image is also a calibration image: the gate scores images the compression saw"))
            return
        }
        items = kept
        photos = photos?.filter { !calibration.paths.contains($0.path) }
        calibrationLeftOut = all.count - kept.count
    }

    /// Compresses with `options`, correcting biases on the calibration images.
    func compress(_ options: QuantizeOptions) throws -> (Model, [TensorQuantReport]) {
        var (q, r) = try Quantizer.quantize(model, options)
        if let calibration { corrected = try calibration.correctBiases(original: model, quantized: &q) }
        return (q, r)
    }

    func compressFirst() throws {
        if let calibration, p.mode == .palette { options.errorFeedback = calibration.errorFeedbackFactors() }
        (quantized, reports) = try compress(options)
    }

    /// The searches (MLToolQuant.QuantizationSearch) ask this run about candidate models.
    private func makeJudge() -> PipelineJudge {
        let classes = model.metadata.labels.count
        return PipelineJudge(
            compressBody: { [unowned self] in try compress($0) },
            sensitivitySource: calibration?.source,
            sensitivityBody: { [unowned self] quantized, tensors in
                guard let calibration else { return [:] }
                if isDetector { return try calibration.outputChange(original: model, quantized: quantized, tensors: tensors) }
                return try calibration.sensitivity(original: model, quantized: quantized, tensors: tensors, modelPath: path,
                                                   classes: classes)
            },
            verdictBody: { [unowned self] in try measure($0) },
            emit: emit, output: out)
    }

    var floatFileBytes: Int { (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0 }

    /// Mixed precision within a size budget (`maxSize`): raises the most sensitive tensors per byte while the file
    /// fits; what was raised, for the report.
    func fillSizeBudget() throws -> String? {
        guard let maxSize = p.maxSize else { return nil }
        guard p.mode == .palette, calibration != nil, !model.metadata.labels.isEmpty else {
            throw PipelineError.invalidParameter(name: "maxSize", reason: "--max-size needs a palette mode and calibration images of a classifier")
        }
        let floatBytes = floatFileBytes
        let budget = Int(Double(floatBytes) * maxSize / 100)
        let size = try judge.fileBytes(quantized)
        guard size < budget else {
            emit(.status(String(format: "size budget: the file is already %.1f%% > --max-size %g%%; nothing raised",
                                Double(size) / Double(max(floatBytes, 1)) * 100, maxSize)))
            return nil
        }
        let start = QuantizationSearch.State(model: quantized, reports: reports, options: options)
        let (state, levels) = try QuantizationSearch.fillBudget(start, size: size, budget: budget, judge: judge)
        guard !levels.isEmpty else { return nil }
        (quantized, reports, options) = (state.model, state.reports, state.options)
        return "\(levels.count) tensors raised within \(String(format: "%g", maxSize))% (most sensitive per byte first): "
            + levels.sorted { $0.key < $1.key }.map { "\($0.key) → \($0.value) bits" }.joined(separator: ", ")
    }

    /// A drop (percentage points) past which a run without `--max-drop` warns: the model is still written, as asked,
    /// but a user who only reads the last lines should not miss that it lost this much.
    static let largeDrop = 5.0

    /// Without `--max-drop`, a warning when the compressed model lost more than `largeDrop` points, with what would help.
    private func warnOfLargeDrop(_ result: GateResult) {
        let drop = (result.floatAccuracy - result.quantizedAccuracy) * 100
        guard drop > Self.largeDrop else { return }
        let uncalibrated = calibration == nil && isImage && p.mode != .fp16
        let calibrate = !uncalibrated ? nil : p.biasCorrection ? "--calibration DATA (the training images)" : "calibration (without --no-bias-correction)"
        let help = [calibrate, "--max-drop P (backs off the most sensitive tensors)", p.mode == .palette ? "more --bits" : nil].compactMap { $0 }
        emit(.warning(String(format: "the compressed model lost %.1f points of %@ (%.4f → %.4f on %d items); to keep more: ", drop,
                             result.metric, result.floatAccuracy, result.quantizedAccuracy, result.items)
                      + help.dropLast().joined(separator: ", ") + (help.count > 1 ? " or " : "") + (help.last ?? "")))
    }

    /// `maxDrop`: backs off the most sensitive tensors until the drop fits.
    private func gated(_ first: GateResult) throws -> GateResult {
        var result = first
        guard let maxDrop = p.maxDrop else {
            warnOfLargeDrop(result)
            return result
        }
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

    /// The gate: mAP@0.5 for a detector, token accuracy for a word tagger, accuracy for a classifier; nil when not
    /// evaluating or with nothing to evaluate on.
    func gate() throws -> GateResult? {
        guard p.evaluate else { return nil }
        if let sentences {
            measure = try taggerMeasure(sentences)
        } else if isDetector, let photos, !photos.isEmpty {
            measure = try detectorMeasure(photos)
        } else if let items, !model.metadata.labels.isEmpty {
            measure = try classifierMeasure(items)
        } else {
            emit(.note("no recorded holdout and no --data: weights compressed without an accuracy check"))
            return nil
        }
        return try gated(try measure(quantized))
    }

    private func taggerMeasure(_ sentences: TaggedCorpus) throws -> (Model) throws -> GateResult {
        let float = try WordTagger(model: model, file: path).evaluate(sentences).report.accuracy
        let out = out
        return { m in
            let q = try WordTagger(model: m, file: out).evaluate(sentences).report.accuracy
            return GateResult(metric: "token accuracy", items: sentences.tokenCount, calibrationLeftOut: 0,
                              floatAccuracy: float, quantizedAccuracy: q, agreement: nil, meanKL: nil,
                              floatMAP50to95: nil, quantizedMAP50to95: nil, backedOff: [], backOffOrder: nil)
        }
    }

    private func detectorMeasure(_ photos: [AnnotatedImage]) throws -> (Model) throws -> GateResult {
        var e = DetectorEvaluator.Parameters()
        e.threads = p.threads
        let emit = emit, leftOut = calibrationLeftOut
        func evaluate(_ m: Model) throws -> DetectionEvaluation {
            try DetectorEvaluator.evaluate(model: m, photos: photos, parameters: e, emit: emit).0
        }
        let float = try evaluate(model)
        return { m in
            let q = try evaluate(m)
            return GateResult(metric: "mAP@0.5", items: photos.count, calibrationLeftOut: leftOut,
                              floatAccuracy: float.mAP50, quantizedAccuracy: q.mAP50, agreement: nil, meanKL: nil,
                              floatMAP50to95: float.mAP50to95, quantizedMAP50to95: q.mAP50to95, backedOff: [], backOffOrder: nil)
        }
    }

    private func classifierMeasure(_ items: [LabeledItem]) throws -> (Model) throws -> GateResult {
        let labels = model.metadata.labels, threads = p.threads, emit = emit, out = out, leftOut = calibrationLeftOut
        let truth = try Evaluation.truth(items, labels: labels, modelPath: path)
        func probabilities(_ m: Model, _ name: String) throws -> [Float] {
            defer { emit(.progressFinished(label: "evaluating")) }
            return try Evaluation.probabilities(m, modelPath: name, items: items, threads: threads, progress: { n, total in
                emit(.progress(label: "evaluating", advanced: n, total: total))
            })
        }
        let floatProbs = try probabilities(model, path)
        let floatAcc = Metrics.evaluate(truth: truth, probabilities: floatProbs, labels: labels).accuracy
        return { m in
            let pr = try probabilities(m, out)
            let r = Metrics.evaluate(truth: truth, probabilities: pr, labels: labels)
            let c = ModelComparison.compare(floatProbs, pr, classes: labels.count)
            return GateResult(metric: "accuracy", items: items.count, calibrationLeftOut: leftOut,
                              floatAccuracy: floatAcc, quantizedAccuracy: r.accuracy,
                              agreement: c.agreement, meanKL: c.meanKL, floatMAP50to95: nil, quantizedMAP50to95: nil,
                              backedOff: [], backOffOrder: nil)
        }
    }

    func report(raised: String?, gate: GateResult?) throws -> QuantizeReport {
        QuantizeReport(model: path, output: out, mode: p.mode.rawValue, bits: p.bits,
                       table: p.mode == .palette ? (options.usesInt8Table ? "int8" : "float") : nil, tensors: reports,
                       fileBytesBefore: floatFileBytes, fileBytesAfter: try judge.fileBytes(quantized),
                       calibration: calibration.map {
                           let fed = reports.filter { $0.mode.hasSuffix("+gptq") }.count
                           return "\($0.source): \(corrected) biases corrected"
                               + (fed > 0 ? ", error feedback (GPTQ) on \(fed) tensors" : "")
                       }, mixedPrecision: raised, gate: gate,
                       seconds: Date().timeIntervalSince(started))
    }
}
