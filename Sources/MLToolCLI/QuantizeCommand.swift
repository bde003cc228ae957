import Foundation
import MLToolCore
import MLToolEval
import MLToolFormat
import MLToolQuant

extension CLI {
    static let quantize = CommandSpec(
        name: "quantize", abstract: "Compress weights (int8, fp16, k-means palettes) and report what it cost.",
        arguments: "MODEL --bits N",
        discussion: """
        Writes MODEL's name with .int8.bin / .fp16.bin / .pal4.bin … beside it (never over MODEL). Every conv and
        dense weight (and a text model's weight matrix) with at least --min-elements elements is compressed. Then
        both models are evaluated on the recorded holdout (or --data): accuracies, top-1 agreement and mean KL.
        With --max-drop P, the most sensitive tensors are backed off to more bits (palettes 4 → 6 → 8 → float) until
        the accuracy drop is at most P points; if even that fails, nothing is written. Sensitive: the largest output
        change on the calibration images when quantized alone (measured), else the lowest weight SNR. With
        --max-size P (palettes), the room left below P% of MODEL's file size is spent the other way first: tensors
        are raised to 6 or 8 bits by measured sensitivity per extra byte.

        Image models are calibrated on a few images (--calibration DATA, else --data, else the recorded holdout;
        --calibration-count, default 32; when they come from the evaluated items, the gate leaves them out): every compressed layer's bias absorbs the mean shift its quantization
        causes (bias correction), and palettized 1×1 conv / dense weights get GPTQ-style error feedback from the
        measured input covariance, so the palette minimises the layer's output error rather than the weight
        error (their weight SNR is lower for it). --no-bias-correction turns both off. Per-channel scales are
        stored as bfloat16.
        """,
        options: [
            OptionSpec("--bits", value: "N", help: "8 (linear by default), 16 (fp16), or 1, 2, 4, 6 (palette)."),
            OptionSpec("--mode", value: "linear|palette|fp16", help: "Override the mode the bits imply."),
            OptionSpec("--per-tensor", help: "Linear: one scale per tensor instead of per output channel."),
            OptionSpec("--asymmetric", help: "Linear: min/max range with a zero point instead of symmetric."),
            OptionSpec("--group-size", value: "G", help: "Palette: one look-up table per G output channels."),
            OptionSpec("--min-elements", value: "N", help: "Leave tensors smaller than N in float (default 2048)."),
            OptionSpec("--max-drop", value: "P", help: "Accuracy gate: allowed drop in percentage points."),
            OptionSpec("--max-size", value: "P", help: "Palettes: raise the most sensitive tensors while the file stays ≤ P% of MODEL."),
            OptionSpec("--data", value: "DATA", help: "Evaluate on DATA instead of the recorded holdout."),
            OptionSpec("--calibration", value: "DATA", help: "Calibration images (default: --data, else the recorded holdout)."),
            OptionSpec("--calibration-count", value: "N", help: "Calibration images to use, spread over DATA (default 32)."),
            OptionSpec("--no-bias-correction", help: "No calibration: float biases, plain palettes (no error feedback)."),
            OptionSpec("--no-eval", help: "Skip the accuracy evaluation."),
            OptionSpec("--seed", value: "N", help: "k-means seed (default 42)."),
            OptionSpec("--out", short: "-o", value: "OUT", help: "Output path."),
            OptionSpec("--json", help: "Print the report as one JSON object."),
            OptionSpec("--threads", value: "T", help: "Threads (default: all cores)."),
            OptionSpec("--quiet", short: "-q", help: "No progress output."),
        ]
    ) { args in
        guard args.positionals.count == 1 else {
            throw CLIError.usage(command: "quantize", message: "expected one MODEL")
        }
        let path = args.positionals[0]
        guard args.has("--bits") || args.has("--mode") else {
            throw CLIError.usage(command: "quantize", message: "give --bits N (8, 16, or 1/2/4/6 for palettes)")
        }
        let modeText = args.string("--mode")
        var bits = try args.int("--bits", default: modeText == "fp16" ? 16 : 8)
        let mode: QuantizeOptions.Mode
        switch modeText {
        case nil: mode = bits == 16 ? .fp16 : (bits == 8 ? .linear : .palette)
        case let m?:
            guard let parsed = QuantizeOptions.Mode(rawValue: m) else {
                throw CLIError.usage(command: "quantize", message: "--mode must be linear, palette or fp16")
            }
            mode = parsed
        }
        if mode == .fp16 { bits = 16 }
        let seed = UInt64(try args.int("--seed", default: 42))
        var options = QuantizeOptions(mode: mode, bits: bits, perTensor: args.has("--per-tensor"),
                                      asymmetric: args.has("--asymmetric"),
                                      groupSize: args.has("--group-size") ? try args.int("--group-size", default: 1) : nil,
                                      minElements: try args.int("--min-elements", default: 2048), seed: seed)
        let suffix = mode == .fp16 ? "fp16" : (mode == .linear ? "int\(bits)" : "pal\(bits)")
        let stem = path.hasSuffix(".bin") ? String(path.dropLast(4)) : path
        let out = args.string("--out") ?? stem + ".\(suffix).bin"
        let model = try ModelLoading.load(path)
        let quiet = args.has("--quiet")
        let threads = try args.int("--threads", default: 0)
        let started = Date()
        let isImage = model.metadata.image != nil && model.metadata.graph != nil
        let evaluate = !args.has("--no-eval")
        // The evaluation items: --data, else the recorded holdout.
        var items: [LabeledItem]? = try args.string("--data").map { try loadItems($0, task: model.metadata.task) }
            ?? (evaluate && model.metadata.split?.holdout.isEmpty == false
                ? try Evaluation.recordedHoldout(model, modelPath: path, skipMissing: false) : nil)

        // Calibration (image models; fp16 needs none): bias correction, and error feedback for palettes.
        var calibration: QuantizeCalibration?
        if isImage && mode != .fp16 && !args.has("--no-bias-correction") {
            let count = try args.int("--calibration-count", default: 32)
            guard count >= 1 else { throw CLIError.usage(command: "quantize", message: "--calibration-count must be ≥ 1") }
            // With --no-eval the holdout was not resolved above; files that are gone are then skipped here.
            let holdout = items == nil && model.metadata.split?.holdout.isEmpty == false
                ? try? Evaluation.recordedHoldout(model, modelPath: path, skipMissing: true) : nil
            let source: (String, [LabeledItem])? = try args.string("--calibration").map { ($0, try loadItems($0, task: model.metadata.task)) }
                ?? items.map { (args.has("--data") ? "--data" : "holdout", $0) } ?? holdout.map { ("holdout", $0) }
            // Drawn from the evaluated items: at most half of them, so that the gate keeps the rest.
            let fromEvaluated = args.string("--calibration") == nil && items != nil
            let useCount = fromEvaluated && (items?.count ?? 0) >= 2 ? min(count, (items?.count ?? 0) / 2) : count
            if let (name, calItems) = source, !calItems.isEmpty {
                calibration = try QuantizeCalibration(model: model, modelPath: path, items: calItems, count: useCount,
                                                      source: name, threads: threads)
            } else if !quiet {
                note("mltool: note: no calibration images (no holdout, --data or --calibration): no bias correction or error feedback")
            }
        }
        // Calibration images drawn from the evaluation items are left out of the gate, which then scores only
        // images the compression never saw.
        var calibrationLeftOut = 0
        if let calibration, args.string("--calibration") == nil, let all = items {
            let kept = all.filter { !calibration.paths.contains($0.path) }
            if !kept.isEmpty {
                items = kept
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

        // Mixed precision within a size budget: raise the most sensitive tensors per byte while the file fits.
        var raised: String?
        let floatFileBytes = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        if let maxSize = try args.string("--max-size").map({ _ in try args.double("--max-size", default: 0) }) {
            guard mode == .palette, let calibration, !model.metadata.labels.isEmpty else {
                throw CLIError.usage(command: "quantize", message: "--max-size needs a palette mode and calibration images of a classifier")
            }
            let budget = Int(Double(floatFileBytes) * maxSize / 100)
            var size = try ModelFile.serialize(quantized).count
            if size < budget {
                let names = reports.filter { $0.skipped == nil }.map(\.name)
                if !quiet { note("size budget: measuring the sensitivity of \(names.count) tensors on \(calibration.source)") }
                let kl = try calibration.sensitivity(original: model, quantized: quantized, tensors: names, modelPath: path,
                                                     classes: model.metadata.labels.count)
                let q = quantized.tensorsByName
                let candidates = names.map { n in
                    MixedPrecision.Candidate(name: n, elements: q[n]?.elementCount ?? 0,
                                             tables: max(1, (q[n]?.quant?.lut?.count ?? 0) >> bits), sensitivity: kl[n] ?? 0)
                }
                var room = budget - size
                while room > 0 {
                    let levels = MixedPrecision.allocate(candidates, bits: bits, room: room)
                    guard !levels.isEmpty else { break }
                    var o = options
                    for (n, b) in levels { o.bitsOverride[n] = b }
                    let (q2, r2) = try compress(o)
                    let s2 = try ModelFile.serialize(q2).count
                    // The byte estimate ignores alignment and JSON; when it falls short, shrink the room and retry.
                    guard s2 <= budget else { room -= s2 - budget + 64; continue }
                    (quantized, reports, options, size) = (q2, r2, o, s2)
                    raised = "\(levels.count) tensors raised within \(String(format: "%g", maxSize))% (most sensitive per byte first): "
                        + levels.sorted { $0.key < $1.key }.map { "\($0.key) → \($0.value) bits" }.joined(separator: ", ")
                    break
                }
            } else if !quiet {
                note(String(format: "size budget: the file is already %.1f%% > --max-size %g%%; nothing raised",
                            Double(size) / Double(max(floatFileBytes, 1)) * 100, maxSize))
            }
        }

        // The accuracy gate.
        var gate: GateResult?
        if evaluate {
            if let items, !model.metadata.labels.isEmpty {
                let truth = try Evaluation.truth(items, labels: model.metadata.labels, modelPath: path)
                let k = model.metadata.labels.count
                let floatProbs = try Evaluation.probabilities(model, modelPath: path, items: items, threads: threads, quiet: quiet)
                let floatAcc = Metrics.evaluate(truth: truth, probabilities: floatProbs, labels: model.metadata.labels).accuracy
                func measure(_ m: Model) throws -> GateResult {
                    let p = try Evaluation.probabilities(m, modelPath: out, items: items, threads: threads, quiet: quiet)
                    let r = Metrics.evaluate(truth: truth, probabilities: p, labels: model.metadata.labels)
                    let c = ModelComparison.compare(floatProbs, p, classes: k)
                    return GateResult(items: items.count, calibrationLeftOut: calibrationLeftOut,
                                      floatAccuracy: floatAcc, quantizedAccuracy: r.accuracy,
                                      agreement: c.agreement, meanKL: c.meanKL, backedOff: [], backOffOrder: nil)
                }
                var result = try measure(quantized)
                var backOffBy = "worst SNR first"
                if let maxDrop = try args.string("--max-drop").map({ _ in try args.double("--max-drop", default: 0) }) {
                    // Back off the worst tensors to more bits, a few at a time, until within the drop. Worst: the
                    // largest output change on the calibration images when quantized alone (measured), else the
                    // lowest weight SNR (which error feedback lowers on purpose, so it is only the fallback).
                    var order = reports.filter { $0.skipped == nil }.sorted { ($0.snrDB ?? .infinity) < ($1.snrDB ?? .infinity) }
                    if let calibration, (result.floatAccuracy - result.quantizedAccuracy) * 100 > maxDrop {
                        if !quiet { note("gate: measuring the sensitivity of \(order.count) tensors on \(calibration.source)") }
                        let kl = try calibration.sensitivity(original: model, quantized: quantized, tensors: order.map(\.name),
                                                             modelPath: path, classes: k)
                        order.sort { (kl[$0.name] ?? 0) > (kl[$1.name] ?? 0) }
                        backOffBy = "largest output change on \(calibration.source) first"
                    }
                    while (result.floatAccuracy - result.quantizedAccuracy) * 100 > maxDrop {
                        guard !order.isEmpty else {
                            throw CLIError.badInput(file: path, reason: String(
                                format: "accuracy gate failed: even with every tensor backed off the drop is %.2f points > --max-drop %.2f; nothing written",
                                (result.floatAccuracy - result.quantizedAccuracy) * 100, maxDrop))
                        }
                        let step = max(1, order.count / 8)
                        for r in order.prefix(step) {
                            let next = Self.nextBits(mode: mode, bits: options.bitsOverride[r.name] ?? bits)
                            options.bitsOverride[r.name] = next
                            result.backedOff.append("\(r.name) → \(next >= 32 ? "float" : "\(next) bits")")
                        }
                        order = Array(order.dropFirst(step)).filter { (options.bitsOverride[$0.name] ?? bits) < 32 }
                        let backed = result.backedOff
                        (quantized, reports) = try compress(options)
                        result = try measure(quantized)
                        result.backedOff = backed
                        if !quiet { note(String(format: "gate: backed off %d tensors, drop now %.2f points", backed.count, (result.floatAccuracy - result.quantizedAccuracy) * 100)) }
                    }
                }
                result.backOffOrder = result.backedOff.isEmpty ? nil : backOffBy
                gate = result
            } else if !quiet {
                note("mltool: note: no recorded holdout and no --data: weights compressed without an accuracy check")
            }
        }
        try ModelFile.write(quantized, to: out, inputs: [path])
        let sizeBefore = floatFileBytes
        let sizeAfter = (try? FileManager.default.attributesOfItem(atPath: out)[.size] as? Int) ?? 0
        let report = QuantizeReport(model: path, output: out, mode: mode.rawValue, bits: bits, tensors: reports,
                                    fileBytesBefore: sizeBefore, fileBytesAfter: sizeAfter,
                                    calibration: calibration.map {
                                        let fed = reports.filter { $0.mode.hasSuffix("+gptq") }.count
                                        return "\($0.source): \(corrected) biases corrected"
                                            + (fed > 0 ? ", error feedback (GPTQ) on \(fed) tensors" : "")
                                    }, mixedPrecision: raised, gate: gate,
                                    seconds: Date().timeIntervalSince(started))
        if args.has("--json") {
            let e = JSONEncoder()
            e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try e.encode(report), as: UTF8.self))
        } else {
            print(report.text, terminator: "")
        }
    }

    /// The next, larger bit width for a backed-off tensor (32 = float).
    static func nextBits(mode: QuantizeOptions.Mode, bits: Int) -> Int {
        switch mode {
        case .palette: return [1: 2, 2: 4, 4: 6, 6: 8][bits] ?? 32
        case .linear, .fp16: return 32
        }
    }
}

struct GateResult: Encodable {
    var items: Int
    /// Evaluation items used for calibration and so left out of the gate.
    var calibrationLeftOut: Int
    var floatAccuracy: Double
    var quantizedAccuracy: Double
    var agreement: Double
    var meanKL: Double
    var backedOff: [String]
    var backOffOrder: String?
}

struct QuantizeReport: Encodable {
    var model: String
    var output: String
    var mode: String
    var bits: Int
    var tensors: [TensorQuantReport]
    var fileBytesBefore: Int
    var fileBytesAfter: Int
    var calibration: String?
    var mixedPrecision: String?
    var gate: GateResult?
    var seconds: Double

    var text: String {
        var s = "\(model) → \(output) (\(mode), \(bits) bits)\n"
        let width = min(48, max(12, tensors.map { $0.name.count }.max() ?? 0))
        s += "  " + "tensor".padding(toLength: width, withPad: " ", startingAt: 0) + "  elements  bits      bytes before → after     SNR dB  cosine\n"
        for t in tensors {
            let name = t.name.count > width ? "…" + t.name.suffix(width - 1) : t.name
            s += "  " + name.padding(toLength: width, withPad: " ", startingAt: 0)
            if let why = t.skipped {
                s += String(format: "  %8d  skipped: %@\n", t.elements, why)
            } else {
                s += String(format: "  %8d  %4d  %10d → %-10d  %6@  %6@\n", t.elements, t.bits, t.bytesBefore, t.bytesAfter,
                            t.snrDB.map { String(format: "%.1f", $0) } ?? "exact", t.cosine.map { String(format: "%.4f", $0) } ?? "-")
            }
        }
        let before = tensors.reduce(0) { $0 + $1.bytesBefore }, after = tensors.reduce(0) { $0 + $1.bytesAfter }
        s += "  weights \(before) → \(after) bytes; file \(fileBytesBefore) → \(fileBytesAfter) bytes ("
            + String(format: "%.1f%%", Double(fileBytesAfter) / Double(max(fileBytesBefore, 1)) * 100) + " of the original)\n"
        if let c = calibration { s += "  calibration on \(c)\n" }
        if let m = mixedPrecision { s += "  mixed precision: \(m)\n" }
        if let g = gate {
            let left = g.calibrationLeftOut > 0 ? " (\(g.calibrationLeftOut) calibration images left out)" : ""
            s += String(format: "  accuracy on %d items%@: float %.4f, quantized %.4f (%+.2f points); top-1 agreement %.4f; mean KL %.5f\n",
                        g.items, left, g.floatAccuracy, g.quantizedAccuracy, (g.quantizedAccuracy - g.floatAccuracy) * 100,
                        g.agreement, g.meanKL)
            if !g.backedOff.isEmpty {
            s += "  backed off \(g.backedOff.count) tensors (\(g.backOffOrder ?? "worst first")): " + g.backedOff.prefix(6).joined(separator: ", ")
                    + (g.backedOff.count > 6 ? ", …" : "") + "\n"
            }
        }
        return s
    }
}
