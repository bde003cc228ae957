import Foundation
import MLTool

extension CLI {
    static let runCommand = CommandSpec(
        name: "run", abstract: "Run the raw graph on NumPy .npy tensors (to check a conversion).",
        arguments: "MODEL",
        discussion: """
        Tensors are in the source's own layout: NCHW for models imported from ONNX, NHWC for Keras and mltool
        models. Integer and bool .npy inputs are read as float32 values (how the engine carries them).
        """,
        options: [
            OptionSpec("--input", value: "[NAME=]FILE.npy", repeats: true, help: "An input tensor: NAME=FILE, or one per graph input in order."),
            OptionSpec("--output", value: "NAME", repeats: true, help: "A tensor to write (default: the model's first output)."),
            OptionSpec("--out", short: "-o", value: "PATH", help: "FILE.npy for one output, a folder for several (default: a summary)."),
            OptionSpec("--threads", value: "T", help: "Threads (default: all cores)."),
        ]
    ) { args in
        guard args.positionals.count == 1 else {
            throw CLIError.usage(command: "run", message: "expected one MODEL")
        }
        let path = args.positionals[0]
        let runner = try GraphRun(model: try ModelLoader.load(path), path: path)
        let files = args.strings("--input")
        let results = try runner.run(try runner.inputs(files), outputs: args.strings("--output"),
                                     threads: try args.int("--threads", default: 0))
        guard let o = args.string("--out") else {
            for (name, t) in results {
                print("\(name) \(t.shape): " + t.data.prefix(8).map { String(format: "%.6g", $0) }.joined(separator: " ")
                      + (t.count > 8 ? " …" : ""))
            }
            return
        }
        let inputs = [path] + files.map { $0.split(separator: "=", maxSplits: 1).last.map(String.init) ?? $0 }
        for (name, t) in results {
            let file = results.count == 1 ? o : o + "/" + GraphRun.fileName(for: name)
            if results.count > 1 { try FileManager.default.createDirectory(atPath: o, withIntermediateDirectories: true) }
            try AtomicFile.write(NPY.encode(t), to: file, inputs: inputs)
            note("wrote \(file): \(name) \(t.shape)")
        }
    }
}
