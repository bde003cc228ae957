import Foundation
import MLTool

extension CLI {
    static let importCommand = CommandSpec(
        name: "import", abstract: "Import an ONNX, Keras HDF5, Core ML or TensorFlow Lite network, or a BERT encoder, into a native model.",
        arguments: "SRC",
        discussion: """
        The source kind is recognised by content. Preprocessing options are stored in the model and used by
        predict, eval and train: value = (pixel·scale + bias − mean) / std for pixels in 0…255.
        A folder holding model.safetensors, config.json and tokenizer.json (Hugging Face's files of a BERT
        model), or the safetensors file with --architecture bert-encoder and --tokenizer, imports as a sentence
        encoder: mean-pooled, L2-normalised embeddings, the tokenizer stored in the model.
        """,
        options: [
            OptionSpec("--out", short: "-o", value: "OUT", help: "Output model (default: SRC's name with .bin)."),
            OptionSpec("--input-size", value: "H[xW]", help: "Input height and width in pixels."),
            OptionSpec("--color", value: "rgb|bgr|gray", help: "Channel order the network expects (default rgb)."),
            OptionSpec("--scale", value: "S", help: "Multiply pixels (0…255) by S."),
            OptionSpec("--bias", value: "B[,B,B]", help: "Then add B (per channel)."),
            OptionSpec("--mean", value: "M,M,M", help: "Subtract a per-channel mean (after scale and bias)."),
            OptionSpec("--std", value: "S,S,S", help: "Divide by a per-channel std."),
            OptionSpec("--resize", value: "shorter|exact|letterbox", help: "Resize the shorter side then crop, to the exact size, or letterbox."),
            OptionSpec("--pad", value: "V", help: "Letterbox padding pixel value 0…255 (default 114)."),
            OptionSpec("--resize-to", value: "N", help: "Shorter side length for --resize shorter (default size/0.875)."),
            OptionSpec("--crop", value: "center|none", help: "Centre crop after resizing (default center)."),
            OptionSpec("--labels", value: "FILE", help: "Class names, one per line, in output order."),
            OptionSpec("--feature-tensor", value: "NAME", help: "The tensor to use as features for train --extractor."),
            OptionSpec("--task", value: "detect", help: "Import an object detector (with --decoder)."),
            OptionSpec("--decoder", value: "SPEC", help: "Detector outputs: yolov8[:T], yolov5[:T], boxes:…, anchor-free:…, anchor-grid:… (docs/FORMAT.md 4.4)."),
            OptionSpec("--classes", value: "N", help: "Detector classes (default: the --labels count)."),
            OptionSpec("--architecture", value: "bert-encoder", help: "What a safetensors file's weights are."),
            OptionSpec("--tokenizer", value: "FILE", help: "The tokenizer.json of a safetensors encoder (default: beside it)."), noProvenance,
        ] + ObjectDetectionTask.boxOptions
    ) { args in
        guard args.positionals.count == 1 else {
            throw CLIError.usage(command: "import", message: "expected one SRC file")
        }
        let src = args.positionals[0]
        guard FileManager.default.fileExists(atPath: src) else {
            throw CLIError.missingInput(file: src, reason: "no such file")
        }
        if ModelImport.isEncoderSource(path: src, architecture: args.string("--architecture"), tokenizer: args.string("--tokenizer")) {
            let model = try ModelImport.importEncoder(path: src, architecture: args.string("--architecture"),
                                                      tokenizer: args.string("--tokenizer"))
            let trimmed = src.hasSuffix("/") ? String(src.dropLast()) : src
            let ext = (trimmed as NSString).pathExtension
            let out = args.string("--out") ?? (ext.isEmpty ? trimmed : String(trimmed.dropLast(ext.count + 1))) + ".bin"
            try ModelFile.write(model, to: out, inputs: model.metadata.provenance.sources.map(\.path))
            print("wrote \(out): sentence encoder, \(model.metadata.graph?.nodes.count ?? 0) nodes, \(model.parameterCount) parameters, "
                  + "\(model.metadata.sentenceEncoder?.tokenizer.vocabulary.count ?? 0) tokens")
            return
        }
        var options = ImportOptions()
        options.image = try preprocessing(args)
        options.featureTensor = args.string("--feature-tensor")
        if let s = options.image { options.inputSize = (s.height, s.width) }
        var inputs = [src]
        if let labelsPath = args.string("--labels") { options.labels = try ModelImport.labels(file: labelsPath); inputs.append(labelsPath) }
        if args.has("--decoder") || args.string("--task") == "detect" {
            guard let spec = args.string("--decoder") else { throw CLIError.usage(command: "import", message: "--task detect needs --decoder SPEC") }
            options.detection = try DetectionSpec.parse(spec, classes: try args.int("--classes", default: options.labels.count),
                                                        nms: try ObjectDetectionTask.detectorOptions(args.optionValues).applied(to: NMSSettings()))
        }
        let model = try ModelImport.importModel(path: src, options: options)
        let ext = (src as NSString).pathExtension
        let out = args.string("--out") ?? (ext.isEmpty ? src : String(src.dropLast(ext.count + 1))) + ".bin"
        try ModelFile.write(model, to: out, inputs: inputs)
        print("wrote \(out): \(model.metadata.graph?.nodes.count ?? 0) nodes, \(model.parameterCount) parameters"
              + (model.metadata.labels.isEmpty ? "" : ", \(model.metadata.labels.count) labels"))
    }

    /// The preprocessing the import options describe, or nil when none was given.
    static func preprocessing(_ args: ParsedArguments) throws -> ImagePreprocessing? {
        let keys = ["--input-size", "--color", "--scale", "--bias", "--mean", "--std", "--resize", "--resize-to", "--crop", "--pad"]
        guard keys.contains(where: args.has) else { return nil }
        guard let sizeText = args.string("--input-size") else {
            throw CLIError.usage(command: "import", message: "preprocessing options need --input-size H[xW]")
        }
        let parts = sizeText.lowercased().split(separator: "x").map { Int($0) }
        guard (1...2).contains(parts.count), let h = parts[0], let w = parts.last ?? nil, h > 0, w > 0 else {
            throw CLIError.usage(command: "import", message: "--input-size: '\(sizeText)' is not H or HxW")
        }
        let color = args.string("--color") ?? "rgb"
        guard ["rgb", "bgr", "gray"].contains(color) else {
            throw CLIError.usage(command: "import", message: "--color must be rgb, bgr or gray")
        }
        let channels = color == "gray" ? 1 : 3
        func list(_ name: String, _ d: Float) throws -> [Float] {
            guard let s = args.string(name) else { return [Float](repeating: d, count: channels) }
            let v = s.split(separator: ",").map { Float($0.trimmingCharacters(in: .whitespaces)) }
            guard v.allSatisfy({ $0 != nil }), v.count == 1 || v.count == channels else {
                throw CLIError.usage(command: "import", message: "\(name): '\(s)' needs 1 or \(channels) numbers")
            }
            let f = v.compactMap { $0 }
            return f.count == 1 ? [Float](repeating: f[0], count: channels) : f
        }
        let std = try list("--std", 1)
        guard std.allSatisfy({ $0 != 0 }) else { throw CLIError.usage(command: "import", message: "--std must not be 0") }
        let resize = args.string("--resize") ?? "shorter"
        let crop = args.string("--crop") ?? "center"
        guard ["shorter", "exact", "letterbox"].contains(resize), ["center", "none"].contains(crop) else {
            throw CLIError.usage(command: "import", message: "--resize must be shorter|exact|letterbox and --crop center|none")
        }
        let pad = Float(try args.double("--pad", default: 114))
        guard (0...255).contains(pad) else { throw CLIError.usage(command: "import", message: "--pad must be in 0…255") }
        let resizeTo = try args.int("--resize-to", default: Int((Double(min(h, w)) / 0.875).rounded()))
        return ImagePreprocessing(height: h, width: w, colorOrder: color, scale: Float(try args.double("--scale", default: 1)),
                                  bias: try list("--bias", 0), mean: try list("--mean", 0), std: std, resize: resize,
                                  resizeTo: resize == "shorter" ? resizeTo : nil, crop: resize == "letterbox" ? "none" : crop,
                                  padValue: resize == "letterbox" ? pad : nil)
    }

    /// `--min-confidence`, `--iou`, `--max-objects`, `--class-agnostic` (import records them; predict overrides).
}
