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
        signal(SIGTERM, SIG_IGN)
        signal(SIGINT, SIG_IGN)
        let server = try StudioServer(folder: args.positionals.first ?? ".", parameters: parameters)
        let stopped = DispatchSemaphore(value: 0)
        let sources = [SIGTERM, SIGINT].map { DispatchSource.makeSignalSource(signal: $0, queue: .global()) }
        for s in sources {
            s.setEventHandler { stopped.signal() }
            s.resume()
        }
        FileHandle.standardError.write(Data("mltool: project \(server.project.root)\n".utf8))
        print("mltool: studio on \(server.url)")
        fflush(nil)   // the address must reach a pipe now
        stopped.wait()
        server.stop()
        sources.forEach { $0.cancel() }
        FileHandle.standardError.write(Data("mltool: stopped\n".utf8))
    }
}
