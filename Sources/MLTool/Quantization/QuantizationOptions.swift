import MLToolCore
import MLToolQuant

/// What `mltool quantize` is asked, before the pipeline runs: the bits and mode as given (they decide each other:
/// `QuantizationParameters.init(bits:mode:)`), and the parameters.
public struct QuantizationSetup: Sendable {
    public var bits: Int?
    public var mode: QuantizeOptions.Mode?
    public var parameters = QuantizationParameters()

    public init() {}

    /// Sets the mode and bits the given pair implies.
    mutating func settle() {
        let q = QuantizationParameters(bits: bits, mode: mode)
        parameters.mode = q.mode
        parameters.bits = q.bits
    }
}

extension QuantizationParameters {
    /// `mltool quantize`'s options, declared once beside the defaults above.
    public static let options: OptionTable<QuantizationSetup> = {
        let d = QuantizationParameters()
        typealias O = TaskOption<QuantizationSetup>
        return OptionTable([
            O(OptionDeclaration("--bits", value: "N", kind: .integer, help: "8 (linear by default), 16 (fp16), or 1, 2, 4, 6 (palette)."),
              set: { s, v in s.bits = try OptionText.int("--bits", v); s.settle() }),
            O(OptionDeclaration("--mode", value: "linear|palette|fp16", help: "Override the mode the bits imply."), set: { s, v in
                guard let m = QuantizeOptions.Mode(rawValue: v) else { throw OptionText.refuse("--mode", "--mode must be linear, palette or fp16") }
                s.mode = m
                s.settle()
            }),
            O(OptionDeclaration("--per-tensor", help: "Linear: one scale per tensor instead of per output channel."),
              set: { s, _ in s.parameters.perTensor = true }),
            O(OptionDeclaration("--asymmetric", help: "Linear: min/max range with a zero point instead of symmetric."),
              set: { s, _ in s.parameters.asymmetric = true }),
            O(OptionDeclaration("--group-size", value: "G", kind: .integer, help: "Palette: one look-up table per G output channels."),
              set: { s, v in s.parameters.groupSize = try OptionText.int("--group-size", v) }),
            O(OptionDeclaration("--lut", value: "float|int8", help: "Palette: the look-up table's values: int8 integers scaled per channel (default; runs on the int8 kernels), or float (computed in float; the default with --per-tensor)."),
              set: { s, v in
                guard ["float", "int8"].contains(v) else { throw OptionText.refuse("--lut", "--lut must be float or int8 (got \(v))") }
                s.parameters.int8Table = v == "int8"
            }),
            O(OptionDeclaration("--min-elements", value: "N", kind: .integer, help: "Leave tensors smaller than N in float (default \(d.minElements))."),
              set: { s, v in s.parameters.minElements = try OptionText.int("--min-elements", v) }),
            O(OptionDeclaration("--max-drop", value: "P", kind: .number, help: "Accuracy gate: allowed drop in percentage points."),
              set: { s, v in s.parameters.maxDrop = try OptionText.double("--max-drop", v) }),
            O(OptionDeclaration("--max-size", value: "P", kind: .number, help: "Palettes: raise the most sensitive tensors while the file stays ≤ P% of MODEL."),
              set: { s, v in s.parameters.maxSize = try OptionText.double("--max-size", v) }),
            O(OptionDeclaration("--data", value: "DATA", help: "Evaluate on DATA instead of the recorded holdout."),
              set: { s, v in s.parameters.data = v }),
            O(OptionDeclaration("--calibration", value: "DATA", help: "Calibration images (default: the training images the model records for it; never the evaluated images)."),
              set: { s, v in s.parameters.calibration = v }),
            O(OptionDeclaration("--calibration-count", value: "N", kind: .integer, help: "Calibration images to use, spread over DATA (default \(d.calibrationCount))."),
              set: { s, v in s.parameters.calibrationCount = try OptionText.int("--calibration-count", v) }),
            O(OptionDeclaration("--no-bias-correction", help: "No calibration: float biases, plain palettes (no error feedback)."),
              set: { s, _ in s.parameters.biasCorrection = false }),
            O(OptionDeclaration("--no-eval", help: "Skip the accuracy evaluation."), set: { s, _ in s.parameters.evaluate = false }),
            O(OptionDeclaration("--seed", value: "N", kind: .integer, help: "k-means seed (default \(d.seed))."), set: { s, v in
                let n = try OptionText.int("--seed", v)
                guard n >= 0 else { throw OptionText.refuse("--seed", "--seed must be ≥ 0") }
                s.parameters.seed = UInt64(n)
            }),
            O(OptionDeclaration("--threads", value: "T", kind: .integer, help: "Threads (default: all cores)."),
              set: { s, v in s.parameters.threads = try OptionText.int("--threads", v) }),
        ])
    }()
}
