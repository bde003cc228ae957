import Foundation
import MLTool

extension CLI {
    static let runCommand = CommandSpec(
        name: "run", abstract: "Run the raw graph on NumPy .npy tensors (to check a conversion).",
        arguments: "MODEL --input x.npy",
        discussion: """
        Inputs and outputs are float32 in the source's own layout: NCHW for models imported from ONNX, NHWC for
        Keras and mltool models. Inputs are matched to the graph's inputs in order.
        """,
        options: [
            OptionSpec("--input", value: "FILE.npy", repeats: true, help: "An input tensor, one per graph input."),
            OptionSpec("--output", value: "NAME", help: "The tensor to write (default: the model's output)."),
            OptionSpec("--out", short: "-o", value: "FILE.npy", help: "Where to write it (default: stdout summary only)."),
            OptionSpec("--threads", value: "T", help: "Threads (default: all cores)."),
        ]
    ) { args in
        guard args.positionals.count == 1 else {
            throw CLIError.usage(command: "run", message: "expected one MODEL")
        }
        let path = args.positionals[0]
        let files = args.strings("--input")
        let model = try ModelLoader.load(path)
        let graph = try ModelLoader.graph(model, path)
        guard files.count == graph.inputs.count else {
            throw CLIError.usage(command: "run", message: "the model has \(graph.inputs.count) input(s) (\(graph.inputs.map { $0.name }.joined(separator: ", "))), got \(files.count) --input")
        }
        let nchw = graph.sourceLayout == "nchw"
        var inputs = [String: Tensor]()
        for (spec, file) in zip(graph.inputs, files) {
            var t = try NPY.read(path: file)
            if nchw && t.rank == 4 { t = Layout.transpose(t, [0, 2, 3, 1]) }
            guard t.rank == spec.shape.count,
                  zip(t.shape, spec.shape).allSatisfy({ $1 < 0 || $0 == $1 }) else {
                throw CLIError.badInput(file: file, reason: "shape \(t.shape) does not fit input '\(spec.name)' \(spec.shape) (IR layout NHWC)")
            }
            inputs[spec.name] = t
        }
        let engine = try Engine(model: model, threads: try args.int("--threads", default: 0))
        let name = args.string("--output") ?? graph.outputs.first ?? ""
        let out = try engine.run(inputs, outputs: [name])
        guard var t = out[name] else {
            throw CLIError.badInput(file: path, reason: "no tensor named '\(name)'")
        }
        if nchw && t.rank == 4 { t = Layout.transpose(t, [0, 3, 1, 2]) }
        if let o = args.string("--out") {
            try AtomicFile.write(NPY.encode(t), to: o, inputs: [path] + files)
            note("wrote \(o): \(name) \(t.shape)")
        } else {
            print("\(name) \(t.shape): " + t.data.prefix(8).map { String(format: "%.6g", $0) }.joined(separator: " ")
                  + (t.count > 8 ? " …" : ""))
        }
    }
}
