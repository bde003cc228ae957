import Foundation
import MLTool

extension CLI {
    private static let defaults = QuantizationParameters()

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

        Image models are calibrated on a few images (--calibration DATA, e.g. the training images, else --data, else the recorded holdout;
        --calibration-count, default 32; when they come from the evaluated items, the gate leaves them out; --no-eval never calibrates on the holdout): every compressed layer's bias absorbs the mean shift its quantization
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
            OptionSpec("--lut", value: "float|int8", help: "Palette: the look-up table's values: int8 integers scaled per channel (default; runs on the int8 kernels), or float (computed in float; the default with --per-tensor)."),
            OptionSpec("--min-elements", value: "N", help: "Leave tensors smaller than N in float (default \(defaults.minElements))."),
            OptionSpec("--max-drop", value: "P", help: "Accuracy gate: allowed drop in percentage points."),
            OptionSpec("--max-size", value: "P", help: "Palettes: raise the most sensitive tensors while the file stays ≤ P% of MODEL."),
            OptionSpec("--data", value: "DATA", help: "Evaluate on DATA instead of the recorded holdout."),
            OptionSpec("--calibration", value: "DATA", help: "Calibration images, e.g. the training images (default: --data, else the recorded holdout when evaluating)."),
            OptionSpec("--calibration-count", value: "N", help: "Calibration images to use, spread over DATA (default \(defaults.calibrationCount))."),
            OptionSpec("--no-bias-correction", help: "No calibration: float biases, plain palettes (no error feedback)."),
            OptionSpec("--no-eval", help: "Skip the accuracy evaluation."),
            OptionSpec("--seed", value: "N", help: "k-means seed (default \(defaults.seed))."),
            OptionSpec("--out", short: "-o", value: "OUT", help: "Output path."),
            OptionSpec("--json", help: "Print the report as one JSON object."),
            OptionSpec("--threads", value: "T", help: "Threads (default: all cores)."),
            OptionSpec("--quiet", short: "-q", help: "No progress output."), noProvenance,
        ]
    ) { args in
        guard args.positionals.count == 1 else {
            throw CLIError.usage(command: "quantize", message: "expected one MODEL")
        }
        let path = args.positionals[0]
        guard args.has("--bits") || args.has("--mode") else {
            throw CLIError.usage(command: "quantize", message: "give --bits N (8, 16, or 1/2/4/6 for palettes)")
        }
        let mode = args.string("--mode").map(QuantizeOptions.Mode.init(rawValue:))   // nil: not given; .some(nil): no mode
        guard mode != .some(nil) else { throw CLIError.usage(command: "quantize", message: "--mode must be linear, palette or fp16") }
        var p = QuantizationParameters(bits: args.has("--bits") ? try args.int("--bits", default: 8) : nil, mode: mode ?? nil)
        p.perTensor = args.has("--per-tensor")
        p.asymmetric = args.has("--asymmetric")
        p.groupSize = args.has("--group-size") ? try args.int("--group-size", default: 1) : nil
        if let lut = args.string("--lut") {
            guard ["float", "int8"].contains(lut) else { throw CLIError.usage(command: "quantize", message: "--lut must be float or int8 (got \(lut))") }
            p.int8Table = lut == "int8"
        }
        p.minElements = try args.int("--min-elements", default: p.minElements)
        p.maxDrop = try args.string("--max-drop").map { _ in try args.double("--max-drop", default: 0) }
        p.maxSize = try args.string("--max-size").map { _ in try args.double("--max-size", default: 0) }
        p.data = args.string("--data")
        p.calibration = args.string("--calibration")
        p.calibrationCount = try args.int("--calibration-count", default: p.calibrationCount)
        p.biasCorrection = !args.has("--no-bias-correction")
        p.evaluate = !args.has("--no-eval")
        p.seed = UInt64(try args.int("--seed", default: Int(p.seed)))
        p.threads = try args.int("--threads", default: p.threads)
        let printer = EventPrinter(quiet: args.has("--quiet"))
        let outcome = try QuantizationPipeline(modelPath: path, output: args.string("--out"), parameters: p)
            .run(progress: printer.handle)
        try outcome.write()
        if args.has("--json") {
            let e = JSONEncoder()
            e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try e.encode(outcome.report), as: UTF8.self))
        } else {
            print(outcome.report.text, terminator: "")
        }
    }
}
