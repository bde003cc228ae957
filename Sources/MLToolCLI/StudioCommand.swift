import Foundation
import MLTool

extension CLI {
    /// `mltool studio [FOLDER]`: a `StudioServer` on the project folder until SIGTERM or SIGINT.
    static let studio = CommandSpec(
        name: "studio", abstract: "Create ML's app in the browser: see the data, train, try, quantize, export (docs/STUDIO.md).",
        arguments: "[FOLDER]",
        discussion: "Serves a local web page over the project FOLDER (default: the current folder): its data folders and "
            + "tables with the task each is, class counts and samples; the training form from the task's options, with "
            + "live curves; the evaluation report, a preview that takes a photo or a sentence, quantization and export "
            + "into the project. Open the address it prints: it holds a token made for this launch, without which every "
            + "request is refused (401). Every path the page names stays inside FOLDER.",
        options: StudioParameters.options.declarations
    ) { args in
        guard args.positionals.count <= 1 else { throw CLIError.usage(command: "studio", message: "expected at most one FOLDER") }
        var parameters = StudioParameters()
        try StudioParameters.options.apply(args.optionValues, to: &parameters)
        let server = try runUntilSignal(start: { try StudioServer(folder: args.positionals.first ?? ".", parameters: parameters) }) {
            FileHandle.standardError.write(Data("mltool: project \($0.project.root)\n".utf8))
            print("mltool: studio on \($0.url)")
        }
        server.stop()
        FileHandle.standardError.write(Data("mltool: stopped\n".utf8))
    }
}
