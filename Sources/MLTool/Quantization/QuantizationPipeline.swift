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
    /// Calibration images (default: the training images the model records for calibration; never the evaluated items).
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

    /// Runs the stages (`QuantizationRun`): items → calibration → compress → size budget → gate → report.
    public func run(progress: ((PipelineEvent) -> Void)? = nil) throws -> Outcome {
        let r = try QuantizationRun(self, emit: progress ?? { _ in })
        try r.loadEvaluationItems()
        try r.calibrate()
        r.leaveCalibrationOut()
        try r.compressFirst()
        let raised = try r.fillSizeBudget()
        let gate = try r.gate()
        return Outcome(model: r.quantized, report: try r.report(raised: raised, gate: gate))
    }
}

/// The quantize pipeline's answers to `QuantizationSearch`: compress with bias correction, measure sensitivity on
/// the calibration images and accuracy on the evaluation items.
struct PipelineJudge: QuantizationJudge {
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
