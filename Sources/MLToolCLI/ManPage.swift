import Foundation
import MLTool

/// mltool(1) in roff, generated from what `--help` prints: the overview's commands, then each command's usage,
/// discussion and options (its task groups under their own headings). `mltool completions man` prints it (hidden;
/// `make deb` installs it gzipped as /usr/share/man/man1/mltool.1.gz).
enum ManPage {
    static func roff(_ commands: [CommandSpec]) -> String {
        var s = """
        .TH MLTOOL 1 "" "mltool \(MLToolInfo.version)" "User Commands"
        .nh
        .ad l
        .SH NAME
        mltool \\- import, train, evaluate, quantize and export classifiers on the CPU
        .SH SYNOPSIS
        .B mltool
        .I command
        .RI [ options ]
        .br
        .B mltool help
        .RI [ command " [" task ]]
        .br
        .B mltool \\-\\-version
        .SH DESCRIPTION
        Create ML and coremltools for Linux: one command per step of a model's life, each with its own options.
        Exit status follows sysexits: 64 a usage error, 65 bad input data, 66 a missing input, 73 an output that cannot be written.
        .SH COMMANDS

        """
        for c in commands {
            s += ".TP\n.B \(escape(c.name))\n\(escape(c.abstract))\n"
        }
        for c in commands { s += section(c) }
        let bundled = BundledModel.all.map { "\($0.fileName), \($0.purpose) (\($0.environmentVariable))" }.joined(separator: "; ")
        s += """
        .SH FILES
        .TP
        .I /usr/share/mltool/
        The bundled models (a tarball keeps them in share/mltool/ beside bin/), each also named by an environment
        variable: \(escape(bundled)).
        .SH SEE ALSO
        .BR "mltool help" " " \\fIcommand\\fR

        """
        return s
    }

    private static func section(_ c: CommandSpec) -> String {
        var s = ".SH \"MLTOOL \(escape(c.name.uppercased()))\"\n\(escape(c.abstract))\n.PP\n.B\n\(escape(c.usage))\n"
        if !c.discussion.isEmpty { s += ".PP\n\(escape(c.discussion))\n" }
        s += options(c.common)
        for g in c.groups {
            s += ".SS \"\(escape(g.title)) (\(escape(g.name)))\"\n"
            if !g.discussion.isEmpty { s += "\(escape(g.discussion))\n" }
            s += options(g.options)
        }
        return s
    }

    private static func options(_ list: [OptionSpec]) -> String {
        list.map { o in
            let names = ([o.short].compactMap { $0 } + [o.flag]).map { "\\fB\(escape($0))\\fR" }.joined(separator: ", ")
            return ".TP\n\(names)\(o.value.map { " \\fI\(escape($0))\\fR" } ?? "")\n\(escape(o.help))\n"
        }.joined()
    }

    /// `text` as roff body text: backslashes and hyphens escaped, no line read as a request.
    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\e").replacingOccurrences(of: "-", with: "\\-")
            .split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.hasPrefix(".") || $0.hasPrefix("'") ? "\\&" + $0 : String($0) }
            .joined(separator: "\n")
    }
}
