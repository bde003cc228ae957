import Foundation
import MLTool

/// One option a command accepts. `value` names the option's argument (nil for a flag). `repeats` lets it be given
/// more than once.
public struct OptionSpec: Sendable {
    public let name: String
    public let short: String?
    public let value: String?
    public let help: String
    public let repeats: Bool

    public init(_ name: String, short: String? = nil, value: String? = nil, repeats: Bool = false, help: String) {
        self.name = name; self.short = short; self.value = value; self.help = help; self.repeats = repeats
    }
}

/// A subcommand: its usage line, options, and the function that runs it.
public struct CommandSpec: Sendable {
    public let name: String
    public let abstract: String
    /// Positional part of the usage line, e.g. "MODEL INPUT...".
    public let arguments: String
    public let discussion: String
    public let options: [OptionSpec]
    public let run: @Sendable (ParsedArguments) throws -> Void

    public init(name: String, abstract: String, arguments: String, discussion: String = "", options: [OptionSpec],
                run: @escaping @Sendable (ParsedArguments) throws -> Void) {
        self.name = name; self.abstract = abstract; self.arguments = arguments; self.discussion = discussion
        self.options = options + [OptionSpec("--help", short: "-h", help: "Show help for this command.")]
        self.run = run
    }

    public var usage: String {
        let opts = options.filter { $0.name != "--help" }.map { o in
            "[\(o.name)\(o.value.map { " \($0)" } ?? "")]"
        }.joined(separator: " ")
        return "mltool \(name) \(arguments)\(opts.isEmpty ? "" : " " + opts)"
    }

    public var help: String {
        var s = "\(abstract)\n\nUSAGE: \(usage)\n"
        if !discussion.isEmpty { s += "\n\(discussion)\n" }
        s += "\nOPTIONS:\n"
        for o in options {
            let head = ([o.short].compactMap { $0 } + [o.name]).joined(separator: ", ") + (o.value.map { " \($0)" } ?? "")
            s += "  " + head.padding(toLength: max(head.count + 2, 28), withPad: " ", startingAt: 0) + o.help + "\n"
        }
        return s
    }
}

/// Parsed command-line arguments: positionals in order, option values by long name.
public struct ParsedArguments: Sendable {
    public let command: String
    public var positionals: [String] = []
    public var values: [String: [String]] = [:]

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
            guard let spec = options.first(where: { $0.name == key || $0.short == key }) else {
                throw CLIError.usage(command: name, message: "unknown option '\(key)'")
            }
            let value: String
            if spec.value != nil {
                if let v = inline { value = v } else {
                    guard i < args.count else {
                        throw CLIError.usage(command: name, message: "\(spec.name) needs a value (\(spec.value!))")
                    }
                    value = args[i]; i += 1
                }
            } else {
                if inline != nil { throw CLIError.usage(command: name, message: "\(spec.name) takes no value") }
                value = ""
            }
            if !spec.repeats, out.values[spec.name] != nil {
                throw CLIError.usage(command: name, message: "\(spec.name) given more than once")
            }
            out.values[spec.name, default: []].append(value)
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
