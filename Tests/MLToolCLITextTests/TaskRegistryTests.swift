import Foundation
import MLTool
import MLToolCLI
import Testing

/// What the constant task did, for the test to read (the CLI prints its lines to stdout).
final class ConstantTaskLog: @unchecked Sendable {
    static let shared = ConstantTaskLog()
    private let lock = NSLock()
    private var lines: [String] = []

    func add(_ line: String) { lock.lock(); lines.append(line); lock.unlock() }
    func take() -> [String] { lock.lock(); defer { lines = []; lock.unlock() }; return lines }
}

/// A fifth task written outside the library — a trivial constant classifier: a `.constant` file holds one label per
/// line, the model always answers the most frequent one. Adding it is this type and one registry line.
enum ConstantTask: TaskKind {
    static let name = "constant"
    static let title = "Constant classification"
    static let trainingHelp = "A .constant file, one label per line; the model always answers the most frequent label."
    static let trainOptions = [
        OptionDeclaration("--out", short: "-o", value: "PATH", help: "Output model (default ./model.bin)."),
        OptionDeclaration("--fallback", value: "LABEL", help: "The label of an empty file (default none)."),
    ]

    static func recognizes(data: String, values: OptionValues) -> Bool { data.hasSuffix(".constant") }

    static func handles(model: Model) -> Bool { model.metadata.task == .network && model.metadata.description == "constant" }

    static func labels(_ path: String) throws -> [String] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
    }

    static func say(_ request: TaskRequest, _ line: String) {
        ConstantTaskLog.shared.add(line)
        request.print(line)
    }

    static func train(_ request: TaskRequest) throws {
        let lines = try labels(request.arguments[0])
        let counts = Dictionary(lines.map { ($0, 1) }, uniquingKeysWith: +)
        let label = counts.max { ($0.value, $1.key) < ($1.value, $0.key) }?.key ?? request.values.string("--fallback") ?? "none"
        var metadata = ModelMetadata(task: .network, labels: [label])
        metadata.description = "constant"
        try ModelFile.write(Model(metadata: metadata, tensors: []), to: request.values.string("--out") ?? "model.bin")
        say(request, "trained: \(label)")
    }

    static func evaluate(_ request: TaskRequest, models: [String], data: String?) throws {
        let label = try ModelFile.read(path: models[0]).metadata.labels[0]
        let truth = try labels(data ?? "")
        say(request, "accuracy \(truth.filter { $0 == label }.count)/\(truth.count)")
    }

    static func predict(_ request: TaskRequest, model: Model, modelPath: String, inputs: [String]) throws {
        for file in inputs { say(request, "\((file as NSString).lastPathComponent): \(model.metadata.labels[0])") }
    }
}

/// Adding a task is one folder and one line in the registry: `mltool train`, `eval`, `predict` and `help` reach a
/// task the library has never heard of, with no edit of the command line's code.
struct TaskRegistryTests {
    static let tasks = TaskRegistry.standard.adding(ConstantTask.self)

    /// A fresh folder under the temporary directory.
    static func scratch() throws -> String {
        let path = NSTemporaryDirectory() + "mltool-tasks-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func aFifthTaskIsReachedByTrainEvalPredictAndHelp() throws {
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let data = dir + "/votes.constant", model = dir + "/c.bin"
        try "rain\nsun\nrain\nrain\nsnow\n".write(toFile: data, atomically: true, encoding: .utf8)
        _ = ConstantTaskLog.shared.take()
        #expect(CLI.run(arguments: ["train", data, "-o", model], tasks: Self.tasks) == .ok)
        #expect(ConstantTaskLog.shared.take() == ["trained: rain"])
        #expect(try ModelFile.read(path: model).metadata.labels == ["rain"])
        #expect(CLI.run(arguments: ["eval", model, data], tasks: Self.tasks) == .ok)
        #expect(ConstantTaskLog.shared.take() == ["accuracy 3/5"])
        #expect(CLI.run(arguments: ["predict", model, data], tasks: Self.tasks) == .ok)
        #expect(ConstantTaskLog.shared.take() == ["votes.constant: rain"])
        #expect(CLI.run(arguments: ["help", "train", "constant"], tasks: Self.tasks) == .ok)
        // Its options are its own: another task's is refused (exit 64), and the standard table knows no such task.
        #expect(CLI.run(arguments: ["train", data, "-o", model, "--l2", "1"], tasks: Self.tasks) == .usage)
        #expect(CLI.run(arguments: ["train", data, "--task", "constant"]) == .usage)
        #expect(ConstantTaskLog.shared.take().isEmpty)
    }

    @Test func theStandardTableTellsEachTaskFromItsData() throws {
        let tasks = TaskRegistry.standard
        #expect(tasks.names == ["image", "text", "detect", "tagger", "tabular", "sound"])
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let conllu = dir + "/a.conllu", csv = dir + "/t.csv"
        try "1\tRain\train\tNOUN\t_\t_\t0\troot\t_\t_\n\n".write(toFile: conllu, atomically: true, encoding: .utf8)
        try "text,label\nthe rain in spain,weather\n".write(toFile: csv, atomically: true, encoding: .utf8)
        #expect(tasks.recognizing(data: conllu).name == "tagger")
        #expect(tasks.recognizing(data: csv).name == "text")
        // A table with --target is tabular data.
        #expect(tasks.recognizing(data: csv, values: OptionValues(["--target": ["label"]])).name == "tabular")
        #expect(tasks.recognizing(data: dir).name == "image")
        // Label folders of audio files are sound (told by extension; nothing is decoded).
        for (label, file) in [("dog", "bark.wav"), ("siren", "wail.flac"), ("siren", "far.ogg")] {
            try FileManager.default.createDirectory(atPath: "\(dir)/sounds/\(label)", withIntermediateDirectories: true)
            try "RIFF".write(toFile: "\(dir)/sounds/\(label)/\(file)", atomically: true, encoding: .utf8)
        }
        #expect(tasks.recognizing(data: dir + "/sounds").name == "sound")
    }

    /// A flag two tasks declare must parse the same way in both (one value or none, same kind).
    @Test func sharedFlagsAgreeOnTheirValues() {
        for list in [TaskRegistry.standard.tasks.flatMap { $0.trainOptions }, TaskRegistry.standard.tasks.flatMap { $0.predictionOptions },
                     TaskRegistry.standard.tasks.flatMap { $0.evaluationOptions }] {
            let byFlag = Dictionary(grouping: list, by: \.flag)
            for (flag, ds) in byFlag {
                #expect(Set(ds.map { $0.value == nil }).count == 1 && Set(ds.map { "\($0.kind)" }).count == 1, "\(flag) is declared differently")
            }
        }
    }
}
