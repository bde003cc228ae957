import Foundation
import MLToolData

/// What one training is asked to do, as `mltool train` and the provenance command see it: the data, the test data,
/// where the model goes, the table columns to read, and the task's parameters. Tasks declare their options over it
/// (`TaskOption<TrainingSetup<Parameters>>`).
public struct TrainingSetup<Parameters: Sendable>: Sendable {
    /// The data's path ("<memory>" for data held in memory).
    public var data: String
    /// Test data instead of a holdout of `data`.
    public var test: String?
    /// The model file to write.
    public var output = "model.bin"
    /// Table columns: image paths, document texts, labels.
    public var pathColumn = "path"
    public var textColumn = "text"
    public var labelColumn = "label"
    public var parameters: Parameters

    public init(data: String, test: String? = nil, parameters: Parameters) {
        self.data = data; self.test = test; self.parameters = parameters
    }

    /// The setup `request` asks for: DATA from its arguments, then `table`'s options applied in order.
    public static func reading(_ request: TaskRequest, _ table: OptionTable<Self>, parameters: Parameters) throws -> Self {
        guard let data = request.arguments.first else {
            throw PipelineError.invalidParameter(name: "DATA", reason: "expected one DATA folder or file")
        }
        var setup = Self(data: data, parameters: parameters)
        try table.apply(request.values, to: &setup)
        return setup
    }

    /// The data and the test data with this setup's table columns.
    public var trainingData: (data: TrainingData, test: TrainingData?) {
        func read(_ path: String) -> TrainingData {
            .path(path, pathColumn: pathColumn, textColumn: textColumn, labelColumn: labelColumn)
        }
        return (read(data), test.map(read))
    }

    /// `mltool train DATA` followed by what `table` records of this setup: the command a model keeps.
    public func command(_ table: OptionTable<Self>) -> String {
        (["mltool", "train", data] + table.recorded(self)).joined(separator: " ")
    }
}

/// The options several tasks share, each declared once here and listed by each task's table at the place its
/// recorded command wants it (a key path says where the task keeps the value).
public enum TrainingOptions {
    public typealias Option<P: Sendable> = TaskOption<TrainingSetup<P>>

    /// `-o PATH`: the model file; the model is named after it ("-o x.bin" names it "x").
    public static func out<P>(_ name: WritableKeyPath<P, String> & Sendable, default d: String) -> Option<P> {
        Option(OptionDeclaration("--out", short: "-o", value: "PATH", help: "Output model (default ./model.bin)."), set: { s, v in
            s.output = v
            s.parameters[keyPath: name] = URL(fileURLWithPath: v).deletingPathExtension().lastPathComponent
        }, record: { s in s.parameters[keyPath: name] == d ? [] : ["-o", s.parameters[keyPath: name] + ".bin"] })
    }

    /// `--test DIR|CSV`: held-out test data instead of a holdout.
    public static func test<P>() -> Option<P> {
        Option(OptionDeclaration("--test", value: "DIR|CSV", help: "Held-out test data (instead of --holdout)."),
               set: { s, v in s.test = v }, record: { s in s.test.map { ["--test", $0] } ?? [] })
    }

    /// `--holdout F`: the share held out and recorded in the model (ignored with --test, which comes before it).
    public static func holdout<P>(_ key: WritableKeyPath<P, Double> & Sendable, default d: Double) -> Option<P> {
        Option(OptionDeclaration("--holdout", value: "F", help: "Fraction held out for testing (default \(d))."), set: { s, v in
            guard s.test == nil else { return }
            let f = try OptionText.double("--holdout", v)
            guard f >= 0, f < 1 else { throw OptionText.refuse("--holdout", "--holdout must be in [0, 1)") }
            s.parameters[keyPath: key] = f
        }, record: { s in
            s.test == nil && s.parameters[keyPath: key] != d ? ["--holdout", "\(s.parameters[keyPath: key])"] : []
        })
    }

    /// `--validation auto|F|none`: the validation split of the training share.
    public static func validation<P>(_ key: WritableKeyPath<P, ValidationRule> & Sendable) -> Option<P> {
        Option(OptionDeclaration("--validation", value: "auto|F|none", help: "Validation split (default auto: Create ML's rule)."),
               set: { s, v in s.parameters[keyPath: key] = try ValidationRule.parse(v) }, record: { s in
            switch s.parameters[keyPath: key] {
            case .auto: return []
            case .none: return ["--validation", "none"]
            case .fraction(let f): return ["--validation", "\(f)"]
            }
        })
    }

    /// `--seed N`: the seed of splits, augmentation and optimisers.
    public static func seed<P>(_ key: WritableKeyPath<P, UInt64> & Sendable, default d: UInt64) -> Option<P> {
        Option(OptionDeclaration("--seed", value: "N", help: "Seed for splits and augmentation (default \(d))."), set: { s, v in
            let n = try OptionText.int("--seed", v)
            guard n >= 0 else { throw OptionText.refuse("--seed", "--seed must be ≥ 0") }
            s.parameters[keyPath: key] = UInt64(n)
        }, record: { s in s.parameters[keyPath: key] == d ? [] : ["--seed", "\(s.parameters[keyPath: key])"] })
    }

    static let threadsDeclaration = OptionDeclaration("--threads", value: "T", kind: .integer, help: "Threads (default: all cores).")

    /// `--threads T` (not recorded: the model does not depend on it).
    public static func threads<P>(_ key: WritableKeyPath<P, Int> & Sendable) -> Option<P> {
        Option(threadsDeclaration, set: { s, v in s.parameters[keyPath: key] = try OptionText.int("--threads", v) })
    }

    /// `--threads T` for a trainer that chooses its own threads (the text trainer's stages and sparse products, the
    /// tagger's single thread): checked and accepted, so that one command line serves every task.
    public static func threadsAccepted<P>() -> Option<P> {
        Option(threadsDeclaration, set: { _, v in _ = try OptionText.int("--threads", v) })
    }

    /// `--cache DIR`: the feature cache's home (its `features` folder; not recorded: the model does not depend on it).
    /// `mltool studio` gives every task that declares it the project's own, so nothing is written outside the project.
    public static func cache<P>(_ key: WritableKeyPath<P, String?> & Sendable) -> Option<P> {
        Option(OptionDeclaration("--cache", value: "DIR", help: "The feature cache's home (default $MLTOOL_CACHE, else ~/.cache/mltool)."),
               set: { s, v in s.parameters[keyPath: key] = v + "/features" })
    }

    /// An integer option recorded when it differs from `d`.
    public static func int<P>(_ declaration: OptionDeclaration, _ key: WritableKeyPath<P, Int> & Sendable, default d: Int,
                              recorded: Bool = true) -> Option<P> {
        Option(declaration, set: { s, v in s.parameters[keyPath: key] = try OptionText.int(declaration.flag, v) }, record: { s in
            recorded && s.parameters[keyPath: key] != d ? [declaration.flag, "\(s.parameters[keyPath: key])"] : []
        })
    }

    /// `--early-stopping N`: patience in iterations (nil: off).
    public static func earlyStopping<P>(_ key: WritableKeyPath<P, Int?> & Sendable) -> Option<P> {
        Option(OptionDeclaration("--early-stopping", value: "N", help: "Stop after N iterations without validation improvement."),
               set: { s, v in s.parameters[keyPath: key] = try OptionText.int("--early-stopping", v) },
               record: { s in s.parameters[keyPath: key].map { ["--early-stopping", "\($0)"] } ?? [] })
    }

    /// `--balance`: class weights inversely proportional to frequency.
    public static func balance<P>(_ key: WritableKeyPath<P, Bool> & Sendable) -> Option<P> {
        Option(OptionDeclaration("--balance", help: "Weight classes inversely to their frequency."),
               set: { s, _ in s.parameters[keyPath: key] = true }, record: { s in s.parameters[keyPath: key] ? ["--balance"] : [] })
    }

    /// `--l2 auto|X`.
    public static func l2<P>(_ key: WritableKeyPath<P, LogisticRegressionOptions.L2> & Sendable) -> Option<P> {
        Option(OptionDeclaration("--l2", value: "auto|X", help: "L2 strength, or auto (chosen on validation; default)."),
               set: { s, v in s.parameters[keyPath: key] = try ParameterText.l2(v) }, record: { s in
            if case .fixed(let v) = s.parameters[keyPath: key] { return ["--l2", "\(v)"] }
            return []
        })
    }

    /// `--strict`: stop at the first image that cannot be decoded (else it is skipped and named; not recorded).
    public static func strict<P>(_ key: WritableKeyPath<P, Bool> & Sendable) -> Option<P> {
        Option(OptionDeclaration("--strict", help: "Stop at the first image that cannot be decoded (else: skipped and named)."),
               set: { s, _ in s.parameters[keyPath: key] = true })
    }

    /// `--label-column NAME` (tables).
    public static func labelColumn<P>() -> Option<P> {
        Option(OptionDeclaration("--label-column", value: "NAME", help: "CSV column with labels (default label)."),
               set: { s, v in s.labelColumn = v }, record: { s in s.labelColumn == "label" ? [] : ["--label-column", s.labelColumn] })
    }
}
