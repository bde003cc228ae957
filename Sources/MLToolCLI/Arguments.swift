import Foundation
import MLTool

/// One option a command accepts: the library's declaration (`OptionDeclaration`), so a task's options are written
/// once, in its table.
public typealias OptionSpec = OptionDeclaration

extension Array where Element == OptionSpec {
    /// The options with each flag kept once (its first declaration).
    var uniqued: [OptionSpec] {
        var seen = Set<String>()
        return filter { seen.insert($0.flag).inserted }
    }
}

/// Options shown under their own heading in a command's help (one task's options).
public struct OptionGroup: Sendable {
    /// What `mltool help COMMAND NAME` takes (a task's name).
    public let name: String
    public let title: String
    public let discussion: String
    public let options: [OptionSpec]

    public init(name: String, title: String, discussion: String, options: [OptionSpec]) {
        self.name = name; self.title = title; self.discussion = discussion; self.options = options
    }
}

/// A subcommand: its usage line, options, and the function that runs it.
public struct CommandSpec: Sendable {
    public let name: String
    public let abstract: String
    /// Positional part of the usage line, e.g. "MODEL INPUT...".
    public let arguments: String
    public let discussion: String
    /// The options every use of the command takes.
    public let common: [OptionSpec]
    /// Options of one kind of use each (a task's), after the common ones in the help.
    public let groups: [OptionGroup]
    public let run: @Sendable (ParsedArguments) throws -> Void

    public init(name: String, abstract: String, arguments: String, discussion: String = "", options: [OptionSpec],
                groups: [OptionGroup] = [], run: @escaping @Sendable (ParsedArguments) throws -> Void) {
        self.name = name; self.abstract = abstract; self.arguments = arguments; self.discussion = discussion
        self.common = options + [OptionSpec("--help", short: "-h", help: "Show help for this command.")]
        self.groups = groups
        self.run = run
    }

    /// Every option the command parses: the common ones, then each group's not seen before (by flag).
    public var options: [OptionSpec] {
        (common + groups.flatMap(\.options)).uniqued
    }

    public var usage: String {
        let opts = common.filter { $0.flag != "--help" }.map { o in
            "[\(o.flag)\(o.value.map { " \($0)" } ?? "")]"
        } + (groups.isEmpty ? [] : ["[" + groups.map(\.name).joined(separator: "|") + " options]"])
        return "mltool \(name) \(arguments)\(opts.isEmpty ? "" : " " + opts.joined(separator: " "))"
    }

    public var help: String {
        var s = "\(abstract)\n\nUSAGE: \(usage)\n"
        if !discussion.isEmpty { s += "\n\(discussion)\n" }
        s += "\nOPTIONS:\n" + Self.lines(common)
        for g in groups { s += Self.section(g) }
        return s
    }

    /// The help of one group (`mltool help train detect`), or nil when the command has no such group.
    public func help(group name: String) -> String? {
        guard let g = groups.first(where: { $0.name == name }) else { return nil }
        return "\(abstract)\n\nUSAGE: \(usage)\n" + Self.section(g) + "\nCOMMON OPTIONS:\n" + Self.lines(common)
    }

    private static func section(_ g: OptionGroup) -> String {
        "\n\(g.title.uppercased()) (\(g.name)):\n" + (g.discussion.isEmpty ? "" : "\(g.discussion)\n\n") + lines(g.options)
    }

    private static func lines(_ options: [OptionSpec]) -> String {
        options.map { o in
            let head = ([o.short].compactMap { $0 } + [o.flag]).joined(separator: ", ") + (o.value.map { " \($0)" } ?? "")
            return "  " + head.padding(toLength: max(head.count + 2, 28), withPad: " ", startingAt: 0) + o.help + "\n"
        }.joined()
    }
}

/// Parsed command-line arguments: positionals in order, option values by long name.
public struct ParsedArguments: Sendable {
    public let command: String
    public var positionals: [String] = []
    public var values: [String: [String]] = [:]

    /// The option values as the library reads them.
    public var optionValues: OptionValues { OptionValues(values) }

    public func has(_ name: String) -> Bool { values[name] != nil }
    public func string(_ name: String) -> String? { values[name]?.last }
    public func strings(_ name: String) -> [String] { values[name] ?? [] }

    public func int(_ name: String, default d: Int) throws -> Int {
        guard let s = string(name) else { return d }
        guard let v = Int(s) else { throw CLIError.usage(command: command, message: "\(name): '\(s)' is not an integer") }
        return v
    }

    public func double(_ name: String, default d: Double) throws -> Double {
        guard let s = string(name) else { return d }
        guard let v = Double(s), v.isFinite else {
            throw CLIError.usage(command: command, message: "\(name): '\(s)' is not a number")
        }
        return v
    }
}

extension CommandSpec {
    /// Parses `args` against this command's options. Accepts `--name value`, `--name=value` and short aliases;
    /// `--` ends the options.
    public func parse(_ args: [String]) throws -> ParsedArguments {
        var out = ParsedArguments(command: name)
        var i = 0
        var optionsEnded = false
        while i < args.count {
            let a = args[i]
            i += 1
            if optionsEnded || !a.hasPrefix("-") || a == "-" {
                out.positionals.append(a)
                continue
            }
            if a == "--" { optionsEnded = true; continue }
            var key = a
            var inline: String?
            if a.hasPrefix("--"), let eq = a.firstIndex(of: "=") {
                key = String(a[..<eq]); inline = String(a[a.index(after: eq)...])
            }
            guard let spec = options.first(where: { $0.flag == key || $0.short == key }) else {
                throw CLIError.usage(command: name, message: "unknown option '\(key)'")
            }
            let value: String
            if spec.value != nil {
                if let v = inline { value = v } else {
                    guard i < args.count else {
                        throw CLIError.usage(command: name, message: "\(spec.flag) needs a value (\(spec.value ?? "a value"))")
                    }
                    value = args[i]; i += 1
                }
            } else {
                if inline != nil { throw CLIError.usage(command: name, message: "\(spec.flag) takes no value") }
                value = ""
            }
            do { try spec.check(value) } catch PipelineError.invalidParameter(_, let reason) {
                throw CLIError.usage(command: name, message: reason)
            }
            if !spec.repeats, out.values[spec.flag] != nil {
                throw CLIError.usage(command: name, message: "\(spec.flag) given more than once")
            }
            out.values[spec.flag, default: []].append(value)
        }
        return out
    }
}

/// Errors of the command line itself.
public enum CLIError: MLToolError {
    case usage(command: String?, message: String)
    case cannotWrite(file: String, reason: String)
    case missingInput(file: String, reason: String)
    case badInput(file: String, reason: String)
    case notSupported(String)

    public var exitStatus: ExitStatus {
        switch self {
        case .usage: return .usage
        case .cannotWrite: return .cannotCreate
        case .missingInput: return .noInput
        case .badInput, .notSupported: return .dataError
        }
    }

    public var description: String {
        switch self {
        case let .usage(_, m): return m
        case let .cannotWrite(f, r): return "\(f): cannot write: \(r)"
        case let .missingInput(f, r): return "\(f): \(r)"
        case let .badInput(f, r): return "\(f): \(r)"
        case let .notSupported(m): return "not yet supported: \(m)"
        }
    }
}
