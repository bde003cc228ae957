import Foundation
import MLTool

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

        Image models are calibrated on a few images (--calibration DATA, e.g. the training images, else --data, else the recorded holdout;
        --calibration-count, default 32; when they come from the evaluated items, the gate leaves them out; --no-eval never calibrates on the holdout): every compressed layer's bias absorbs the mean shift its quantization
        causes (bias correction), and palettized 1×1 conv / dense weights get GPTQ-style error feedback from the
        measured input covariance, so the palette minimises the layer's output error rather than the weight
        error (their weight SNR is lower for it). --no-bias-correction turns both off. Per-channel scales are
        stored as bfloat16.
        """,
        options: QuantizationParameters.options.declarations + [
            OptionSpec("--out", short: "-o", value: "OUT", help: "Output path."),
            OptionSpec("--json", help: "Print the report as one JSON object."),
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
        var setup = QuantizationSetup()
        try QuantizationParameters.options.apply(args.optionValues, to: &setup)
        let p = setup.parameters
        let printer = EventPrinter(quiet: args.has("--quiet"))
        let outcome = try QuantizationPipeline(modelPath: path, output: args.string("--out"), parameters: p)
            .run(progress: printer.handle)
        try outcome.write()
        if args.has("--json") {
            print(try TaskOutput.json(outcome.report))
        } else {
            print(outcome.report.text, terminator: "")
        }
    }
}
