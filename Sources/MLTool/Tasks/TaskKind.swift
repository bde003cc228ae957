import Foundation
import MLToolCore

/// What a command asks of a task: its positional arguments, the option values given, and where its events and
/// result lines go (`mltool` prints events on stderr and result lines on stdout; a library caller keeps them).
public struct TaskRequest: Sendable {
    public var arguments: [String]
    public var values: OptionValues
    public var progress: @Sendable (PipelineEvent) -> Void
    /// One line of the command's result.
    public var output: @Sendable (String) -> Void
    /// Cancels the work between its stages and batches (`CancellationError`); every trainer takes it
    /// (TrainingCancellationTests).
    public var cancellation = Cancellation()

    public init(arguments: [String], values: OptionValues = OptionValues(),
                progress: @escaping @Sendable (PipelineEvent) -> Void = { _ in },
                output: @escaping @Sendable (String) -> Void = { _ in }) {
        self.arguments = arguments; self.values = values; self.progress = progress; self.output = output
    }

    /// A line of the command's result, printed now.
    public func print(_ line: String) { output(line) }

    /// `--quiet` was given.
    public var quiet: Bool { values.has("--quiet") }

    /// `--report FILE` (eval): writes the HTML report with `write` and says so.
    public func writeReport(_ write: (String) throws -> Void) throws {
        guard let path = values.string("--report") else { return }
        try write(path)
        progress(.status("mltool: wrote \(path)"))
    }
}

/// One task mltool trains, evaluates and predicts with (image classification, text classification, object
/// detection, word tagging, …): its folder under `Sources/MLTool/Tasks/` holds its parameters, trainer, evaluator,
/// predictor and this conformance; `TaskRegistry.standard` lists it. `mltool train`, `eval` and `predict` consult
/// the registry only: a new task is a folder and one line there.
public protocol TaskKind: Sendable {
    /// What `--task` takes ("image", "text", "detect", "tagger").
    static var name: String { get }
    /// Its section title in `mltool train --help`.
    static var title: String { get }
    /// The paragraph `mltool train --help` shows in its section: the data it reads and how it trains.
    static var trainingHelp: String { get }
    /// Its `mltool train` options, in the order it applies and records them.
    static var trainOptions: [OptionDeclaration] { get }
    /// Its `mltool eval` and `mltool predict` options beyond those every task shares.
    static var evaluationOptions: [OptionDeclaration] { get }
    static var predictionOptions: [OptionDeclaration] { get }
    /// Whether the folder or file at `data` holds this task's training data (`values`: the options given, such as
    /// a table's column names). Cheap: reads names, a header or a few files, never a whole data set.
    static func recognizes(data: String, values: OptionValues) -> Bool
    /// Whether `model` is one of this task's models.
    static func handles(model: Model) -> Bool
    /// `mltool train DATA`: `request.arguments` is [DATA]; writes the model and prints what training measured.
    static func train(_ request: TaskRequest) throws
    /// `mltool eval`: `models` (one, or two to compare) on `data`, else on the first model's recorded holdout.
    static func evaluate(_ request: TaskRequest, models: [String], data: String?) throws
    /// `mltool predict MODEL INPUT...`: `inputs` are files (folders already expanded, shards applied).
    static func predict(_ request: TaskRequest, model: Model, modelPath: String, inputs: [String]) throws
    /// Which files below a folder `predict` takes (default: every file).
    static func predictsOn(file: String, model: Model) -> Bool
    /// `mltool serve`: the model loaded once, answering batches of requests with `predict --json`'s objects
    /// (default: not yet supported for the task).
    static func servingPredictor(model: Model, path: String) throws -> any ServingPredictor
    /// What `model` takes in `mltool serve` and the studio's preview form: images, texts, or table rows with their
    /// columns; nil when its models cannot be served.
    static func previewInput(model: Model) -> PreviewInput?
    /// Why `mltool quantize` has nothing to compress in `model` (nil: it compresses this task's models).
    static func quantizationRefusal(model: Model) -> String?
    /// What the data at `data` holds as this task reads it (`mltool studio`'s data view; default: only a note that
    /// the task has no summary yet).
    static func dataSummary(_ data: String) throws -> DataSummary
}

extension TaskKind {
    public static var evaluationOptions: [OptionDeclaration] { [] }
    public static var predictionOptions: [OptionDeclaration] { [] }
    public static func predictsOn(file: String, model: Model) -> Bool { true }
    public static func servingPredictor(model: Model, path: String) throws -> any ServingPredictor {
        throw PipelineError.notSupported("mltool serve for \(name) models (\(path))")
    }
    public static func previewInput(model: Model) -> PreviewInput? { nil }

    /// The kind of input `model` is served with (`previewInput`'s), or the refusal of a task that serves none.
    static func servedInput(model: Model, path: String) throws -> ServingInput.Kind {
        guard let kind = previewInput(model: model)?.takes else {
            throw PipelineError.notSupported("mltool serve for \(name) models (\(path))")
        }
        return kind
    }
    public static func quantizationRefusal(model: Model) -> String? { nil }
    public static func dataSummary(_ data: String) throws -> DataSummary {
        var s = DataSummary()
        s.note = "not yet supported: a summary of \(title.lowercased()) data (training it is)"
        return s
    }
}

/// The table of tasks. Later entries are more specific: DATA goes to the last task that recognises it and a model
/// to the last that handles it, so image classification (label folders, or any table of paths) comes first.
public struct TaskRegistry: Sendable {
    public let tasks: [any TaskKind.Type]

    public init(_ tasks: [any TaskKind.Type]) {
        precondition(!tasks.isEmpty, "a task registry needs at least one task")
        self.tasks = tasks
    }

    /// mltool's tasks.
    public static let standard = TaskRegistry([
        ImageClassificationTask.self,
        TextClassificationTask.self,
        ObjectDetectionTask.self,
        WordTaggingTask.self,
        TabularTask.self,
        SoundClassificationTask.self,
    ])

    /// This table with `task` added at the end (asked first).
    public func adding(_ task: any TaskKind.Type) -> TaskRegistry { TaskRegistry(tasks + [task]) }

    public var names: [String] { tasks.map { $0.name } }

    public func named(_ name: String) -> (any TaskKind.Type)? { tasks.first { $0.name == name } }

    /// The task `data` holds: the last that recognises it, else the first (image classification).
    public func recognizing(data: String, values: OptionValues = OptionValues()) -> any TaskKind.Type {
        tasks.last { $0.recognizes(data: data, values: values) } ?? tasks[0]
    }

    /// The task `model` belongs to: the last that handles it, else the first.
    public func handling(model: Model) -> any TaskKind.Type {
        tasks.last { $0.handles(model: model) } ?? tasks[0]
    }
}
