import Foundation
import MLToolCore

/// How to compress weights.
public struct QuantizeOptions: Sendable {
    public enum Mode: String, Sendable {
        case linear, palette, fp16

        /// The next, larger bit width for a tensor backed off from `bits` (32 = float): palettes climb
        /// 1 → 2 → 4 → 6 → 8, then float; linear and fp16 go straight to float. The one bit ladder (the accuracy
        /// gate and the size budget both climb it).
        public func nextBits(after bits: Int) -> Int {
            switch self {
            case .palette: return Self.paletteLadder[bits] ?? 32
            case .linear, .fp16: return 32
            }
        }

        private static let paletteLadder = [1: 2, 2: 4, 4: 6, 6: 8]
    }
    public var mode: Mode
    /// 8 for linear; 1, 2, 4, 6 or 8 for palette; 16 for fp16.
    public var bits: Int
    /// One scale per tensor instead of per output channel (linear), or plain palettes without per-channel scales.
    public var perTensor: Bool
    /// Linear: a zero point per channel (min/max) instead of symmetric (max |w|).
    public var asymmetric: Bool
    /// Palette: output channels per look-up table; nil = one table per tensor.
    public var groupSize: Int?
    /// Palette: true, tables of integers in −127…127 with the step in the channel scales (Core ML's int8 look-up
    /// table; such layers run on the int8 kernels, as int8 models do); false, tables of floats (Core ML's float
    /// look-up table, computed in float); nil, the default: `usesInt8Table`.
    public var int8Table: Bool?
    /// Whether palettes get int8 tables: as `int8Table` says, else wherever they have per-channel scales (not with
    /// `perTensor`). The default because such a palette costs what a float table does in file size and about what
    /// it does in accuracy, and runs on AVX2 and up 1.2–1.8× faster than float, where a float table runs at about
    /// float's speed (README, "How a quantized model runs").
    public var usesInt8Table: Bool { mode == .palette && (int8Table ?? !perTensor) }
    /// Tensors with fewer elements stay in float.
    public var minElements: Int
    public var seed: UInt64
    /// Per-tensor overrides of `bits` (used by the accuracy gate to back off sensitive tensors).
    public var bitsOverride: [String: Int]
    /// Palette: `ErrorFeedback.factor`s by weight name (1×1 conv / dense layers, from calibration inputs); those
    /// weights get GPTQ-style error feedback.
    public var errorFeedback: [String: ErrorFeedback.Factor] = [:]

    public init(mode: Mode, bits: Int, perTensor: Bool = false, asymmetric: Bool = false, groupSize: Int? = nil,
                minElements: Int = 2048, seed: UInt64 = 42, bitsOverride: [String: Int] = [:]) {
        self.mode = mode; self.bits = bits; self.perTensor = perTensor; self.asymmetric = asymmetric
        self.groupSize = groupSize; self.minElements = minElements; self.seed = seed; self.bitsOverride = bitsOverride
    }
}

/// What happened to one tensor.
public struct TensorQuantReport: Codable, Equatable, Sendable {
    public var name: String
    public var elements: Int
    public var mode: String
    public var bits: Int
    public var bytesBefore: Int
    public var bytesAfter: Int
    /// Signal-to-noise ratio of the dequantized weights in dB (nil when exact or skipped).
    public var snrDB: Double?
    public var cosine: Double?
    public var skipped: String?
}

public enum QuantError: MLToolError {
    case invalidOptions(String)
    case unsupportedTensor(name: String, reason: String)
    /// The accuracy gate cannot be met: every tensor was backed off and the drop is still above the limit.
    case gateFailed(drop: Double, maxDrop: Double)

    public var exitStatus: ExitStatus {
        if case .invalidOptions = self { return .usage }
        return .dataError
    }

    public var description: String {
        switch self {
        case let .invalidOptions(m): return m
        case let .unsupportedTensor(name, reason): return "tensor '\(name)': \(reason)"
        case let .gateFailed(drop, maxDrop):
            return String(format: "accuracy gate failed: even with every tensor backed off the drop is %.2f points > --max-drop %.2f; nothing written", drop, maxDrop)
        }
    }
}

/// Compresses the weights of a model: linear int8 (per channel or per tensor), fp16, or k-means palettes.
public enum Quantizer {
    /// The weights worth compressing and the axis of their output channels: conv and dense weights of the graph
    /// (the last axis in the IR layout), a text model's weight matrix (its last axis, the classes) and a word
    /// tagger's (its last axis, the tags).
    public static func weightAxes(of model: Model) -> [String: Int] {
        var out = [String: Int]()
        let byName = model.tensorsByName
        for node in model.metadata.graph?.nodes ?? [] where [.conv, .dense, .matMul].contains(node.op) {
            guard node.inputs.count > 1, let t = byName[node.inputs[1]] else { continue }
            out[t.name] = t.shape.count - 1
        }
        if let w = model.metadata.text?.weightsTensor, let t = byName[w] { out[w] = t.shape.count - 1 }
        if let w = model.metadata.tagger?.weightsTensor, let t = byName[w] { out[w] = t.shape.count - 1 }
        return out
    }

    /// Returns the compressed model and a report per weight tensor.
    public static func quantize(_ model: Model, _ options: QuantizeOptions) throws -> (Model, [TensorQuantReport]) {
        try validate(options)
        let axes = weightAxes(of: model)
        var out = model
        var reports = [TensorQuantReport]()
        for (i, t) in model.tensors.enumerated() {
            guard let axis = axes[t.name] else { continue }
            let before = t.bytes.count
            var report = TensorQuantReport(name: t.name, elements: t.elementCount, mode: options.mode.rawValue,
                                           bits: options.bitsOverride[t.name] ?? options.bits, bytesBefore: before,
                                           bytesAfter: before, snrDB: nil, cosine: nil, skipped: nil)
            if t.dtype != .f32 {
                report.skipped = "already \(t.dtype.name)"
            } else if t.elementCount < options.minElements {
                report.skipped = "\(t.elementCount) elements < --min-elements \(options.minElements)"
            } else if report.bits >= 32 {
                report.skipped = "kept in float by the accuracy gate"
            }
            if report.skipped != nil { reports.append(report); continue }
            let w = try t.floats()
            var q = try quantizeTensor(t, values: w, axis: axis, options: options, bits: report.bits)
            if let u = options.errorFeedback[t.name], ErrorFeedback.applies(to: q) {
                q = try ErrorFeedback.refine(q, original: w, factor: u)
                report.mode += "+gptq"
            }
            let back = try q.floats()
            report.bytesAfter = q.bytes.count
            (report.snrDB, report.cosine) = error(w, back)
            out.tensors[i] = q
            reports.append(report)
        }
        return (out, reports)
    }

    static func validate(_ o: QuantizeOptions) throws {
        switch o.mode {
        case .linear where o.bits != 8:
            throw QuantError.invalidOptions("--mode linear supports --bits 8 (got \(o.bits)); use --mode palette for fewer bits")
        case .palette where ![1, 2, 4, 6, 8].contains(o.bits):
            throw QuantError.invalidOptions("--mode palette supports --bits 1, 2, 4, 6 or 8 (got \(o.bits))")
        case .fp16 where o.bits != 16:
            throw QuantError.invalidOptions("--mode fp16 means 16 bits (got --bits \(o.bits))")
        default: break
        }
        if let g = o.groupSize, g < 1 { throw QuantError.invalidOptions("--group-size must be ≥ 1") }
        if o.int8Table == true && o.mode != .palette {
            throw QuantError.invalidOptions("--lut int8 is for palettes (--mode palette, --bits 1, 2, 4 or 6)")
        }
        if o.int8Table == true && o.perTensor {
            throw QuantError.invalidOptions("--lut int8 needs per-channel scales: drop --per-tensor")
        }
        if o.minElements < 0 { throw QuantError.invalidOptions("--min-elements must be ≥ 0") }
    }

    /// One tensor in the requested mode; `bits` may differ from options.bits (gate back-off).
    static func quantizeTensor(_ t: StoredTensor, values w: [Float], axis: Int, options: QuantizeOptions,
                               bits: Int) throws -> StoredTensor {
        switch options.mode {
        case .fp16:
            let halves = w.map { Float16($0).bitPattern }
            return StoredTensor(name: t.name, dtype: .f16, shape: t.shape,
                                bytes: TensorBytes(copying: halves.withUnsafeBytes { Array($0) }))
        case .linear:
            return LinearQuantizer.quantize(t, values: w, axis: options.perTensor ? nil : axis,
                                            asymmetric: options.asymmetric)
        case .palette:
            return try Palettizer.palettize(t, values: w, bits: bits, axis: options.groupSize == nil ? nil : axis,
                                            groupSize: options.groupSize, seed: options.seed,
                                            channelAxis: options.perTensor ? nil : axis, int8Table: options.usesInt8Table)
        }
    }

    /// SNR in dB and cosine similarity of `approx` against `exact`.
    public static func error(_ exact: [Float], _ approx: [Float]) -> (Double?, Double?) {
        var signal = 0.0, noise = 0.0, dot = 0.0, na = 0.0, nb = 0.0
        for i in exact.indices {
            let a = Double(exact[i]), b = Double(approx[i])
            signal += a * a; noise += (a - b) * (a - b); dot += a * b; na += a * a; nb += b * b
        }
        let snr = noise > 0 ? 10 * log10(signal / noise) : nil
        let cos = na > 0 && nb > 0 ? dot / (na.squareRoot() * nb.squareRoot()) : nil
        return (snr, cos)
    }
}
