import Foundation
import MLTool

/// The `mltool` command line: dispatches to one `CommandSpec` per subcommand (one file each).
public enum CLI {
    /// Every subcommand, in the order `--help` lists them; train, eval and predict consult `tasks`.
    static func commands(_ tasks: TaskRegistry) -> [CommandSpec] {
        [importCommand, train(tasks), eval(tasks), quantize, export, info, predict(tasks), runCommand, bench, serve, studio]
    }

    static var overview: String {
        var s = """
        mltool \(MLToolInfo.version): import, train, evaluate, quantize and export classifiers on the CPU.

        USAGE: mltool <command> [options]

        COMMANDS:

        """
        for c in commands(.standard) { s += "  " + c.name.padding(toLength: 12, withPad: " ", startingAt: 0) + c.abstract + "\n" }
        s += "\nSee 'mltool help <command>' or 'mltool <command> --help' for a command's options.\n"
        return s
    }

    /// Runs the command line and exits the process with a sysexits status.
    public static func main(arguments: [String]) -> Never {
        exit(run(arguments: arguments).rawValue)
    }

    /// Runs the command line and returns the exit status (testable: never exits). `tasks`: the task table train,
    /// eval and predict consult.
    public static func run(arguments: [String], tasks: TaskRegistry = .standard) -> ExitStatus {
        let commands = commands(tasks)
        guard let first = arguments.first else {
            FileHandle.standardError.write(Data(overview.utf8))
            return .usage
        }
        switch first {
        case "--help", "-h":
            print(overview, terminator: "")
            return .ok
        case "--version":
            print("mltool \(MLToolInfo.version)")
            return .ok
        case "completions":
            // Hidden: what `make deb` installs (bash and zsh completions, the man page), from the table above.
            let what = arguments.dropFirst().first ?? ""
            guard let text = what == "man" ? ManPage.roff(commands) : Completions.script(shell: what, commands: commands) else {
                return fail(CLIError.usage(command: nil, message: "completions: expected bash, zsh or man, got '\(what)'"), commands)
            }
            print(text, terminator: "")
            return .ok
        case "help":
            guard arguments.count > 1 else { print(overview, terminator: ""); return .ok }
            guard let c = commands.first(where: { $0.name == arguments[1] }) else {
                return fail(CLIError.usage(command: nil, message: "unknown command '\(arguments[1])'"), commands)
            }
            guard arguments.count > 2 else { print(c.help, terminator: ""); return .ok }
            guard let text = c.help(group: arguments[2]) else {
                return fail(CLIError.usage(command: c.name, message: "'\(arguments[2])' is not one of \(c.name)'s tasks (\(c.groups.map(\.name).joined(separator: ", ")))"), commands)
            }
            print(text, terminator: "")
            return .ok
        default:
            break
        }
        guard let command = commands.first(where: { $0.name == first }) else {
            return fail(CLIError.usage(command: nil, message: "unknown command '\(first)'"), commands)
        }
        let rest = Array(arguments.dropFirst())
        if rest.contains("--help") || rest.contains("-h") {
            print(command.help, terminator: "")
            return .ok
        }
        do {
            let parsed = try command.parse(rest)
            if parsed.has("--no-provenance") { setenv("MLTOOL_PROVENANCE", ProvenancePolicy.none.rawValue, 1) }
            try command.run(parsed)
            return .ok
        } catch PipelineError.invalidParameter(_, let reason) {
            // A parameter the library refused came from this command's options: a usage error of the command.
            return fail(CLIError.usage(command: command.name, message: reason), commands)
        } catch {
            return fail(error, commands)
        }
    }

    /// `--no-provenance` (train, import, quantize, export): the output records no sources, paths or command.
    static let noProvenance = OptionSpec("--no-provenance", help: "Record no source paths or command in the output (docs/SECURITY.md).")

    static func fail(_ error: Error, _ commands: [CommandSpec]) -> ExitStatus {
        let status: ExitStatus
        var text: String
        if let e = error as? MLToolError {
            status = e.exitStatus
            text = "mltool: error: \(e.description)\n"
            if case let CLIError.usage(name, _) = error {
                if let name, let c = commands.first(where: { $0.name == name }) {
                    text += "USAGE: \(c.usage)\nSee 'mltool help \(name)'.\n"
                } else {
                    text += "See 'mltool --help'.\n"
                }
            }
        } else {
            status = .software
            text = "mltool: error: \(error)\n"
        }
        FileHandle.standardError.write(Data(text.utf8))
        return status
    }
}
