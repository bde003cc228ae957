import Foundation

/// How one option looks on a command line: its flag, short alias, the name of its value (nil for a switch), whether it
/// may be given more than once, and its help line. The CLI parses and prints help from these; tasks declare them in
/// their option tables (`TaskOption`), so an option is written once.
public struct OptionDeclaration: Sendable, Equatable {
    /// What a value must be; the command line checks it before any file is read.
    public enum Kind: Sendable, Equatable {
        case text, integer, number
    }

    public let flag: String
    public let short: String?
    public let value: String?
    public let kind: Kind
    public let repeats: Bool
    public let help: String

    public init(_ flag: String, short: String? = nil, value: String? = nil, kind: Kind = .text, repeats: Bool = false,
                help: String) {
        self.flag = flag; self.short = short; self.value = value; self.kind = kind; self.repeats = repeats; self.help = help
    }

    /// Refuses `text` unless it is a value of this option's kind (the message `OptionText` gives).
    public func check(_ text: String) throws {
        switch kind {
        case .text: return
        case .integer: _ = try OptionText.int(flag, text)
        case .number: _ = try OptionText.double(flag, text)
        }
    }
}

/// The values a command line gave, by flag ("--seed" → ["7"]; a switch → [""]), in the order given.
public struct OptionValues: Sendable {
    public var values: [String: [String]]

    public init(_ values: [String: [String]] = [:]) { self.values = values }

    public func has(_ flag: String) -> Bool { values[flag] != nil }
    public func string(_ flag: String) -> String? { values[flag]?.last }
    public func strings(_ flag: String) -> [String] { values[flag] ?? [] }
    /// The flags given, sorted.
    public var flags: [String] { values.keys.sorted() }

    /// The integer `flag` was given, or nil when it was not (a value that is not one: `OptionText`'s refusal).
    public func int(_ flag: String) throws -> Int? { try string(flag).map { try OptionText.int(flag, $0) } }

    /// The number `flag` was given, or nil when it was not.
    public func double(_ flag: String) throws -> Double? { try string(flag).map { try OptionText.double(flag, $0) } }
}

/// One option of a task, declared once beside its default: how its value sets the task's `Target` (its parameters
/// and data description) and how `Target` writes the option back into the command a model records in its
/// provenance (nothing when it holds the default, or for options that do not change the model).
public struct TaskOption<Target>: Sendable {
    public let declaration: OptionDeclaration
    let apply: @Sendable (inout Target, String) throws -> Void
    let record: @Sendable (Target) -> [String]

    public init(_ declaration: OptionDeclaration, set: @escaping @Sendable (inout Target, String) throws -> Void,
                record: @escaping @Sendable (Target) -> [String] = { _ in [] }) {
        self.declaration = declaration; self.apply = set; self.record = record
    }
}

/// A task's options in the order they are applied and recorded.
public struct OptionTable<Target>: Sendable {
    public let options: [TaskOption<Target>]

    public init(_ options: [TaskOption<Target>]) { self.options = options }

    public var declarations: [OptionDeclaration] { options.map(\.declaration) }

    /// Sets `target` from `values`, in table order (so an option may depend on one before it: --holdout on --test).
    public func apply(_ values: OptionValues, to target: inout Target) throws {
        for o in options {
            guard let v = values.string(o.declaration.flag) else { continue }
            try o.apply(&target, v)
        }
    }

    /// The options `target` holds other than their defaults, as command-line words in table order.
    public func recorded(_ target: Target) -> [String] { options.flatMap { $0.record(target) } }
}

/// Option values parsed where options are declared. A refusal is `PipelineError.invalidParameter`, which `mltool`
/// reports as a usage error (exit 64) of its command.
public enum OptionText {
    public static func int(_ flag: String, _ text: String) throws -> Int {
        guard let v = Int(text) else { throw PipelineError.invalidParameter(name: flag, reason: "\(flag): '\(text)' is not an integer") }
        return v
    }

    public static func double(_ flag: String, _ text: String) throws -> Double {
        guard let v = Double(text), v.isFinite else {
            throw PipelineError.invalidParameter(name: flag, reason: "\(flag): '\(text)' is not a number")
        }
        return v
    }

    /// A refusal of `flag`'s value.
    public static func refuse(_ flag: String, _ reason: String) -> PipelineError {
        PipelineError.invalidParameter(name: flag, reason: reason)
    }
}
