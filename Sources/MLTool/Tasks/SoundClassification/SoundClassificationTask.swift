import Foundation
import MLToolAudio
import MLToolCore
import MLToolData

/// Sound classification (Create ML's `MLSoundClassifier`): label folders of recordings (WAV, FLAC, Ogg Vorbis);
/// Google's speech embedding, frozen, over windows of each recording and a logistic-regression head on the windows.
public enum SoundClassificationTask: TaskKind {
    public typealias Setup = TrainingSetup<SoundClassifierParameters>
    public static let name = "sound"
    public static let title = "Sound classification"
    public static let trainingHelp = """
        DATA is a folder whose subfolders are the labels (WAV, FLAC or Ogg Vorbis files below them), or a CSV with a
        path and a label column. Each recording is resampled to 16 kHz, padded and cut into overlapping windows of
        0.78 s; the frozen speech embedding (models/speech-embedding.bin) gives 96 features per window (cached), and a
        logistic-regression head is fitted on the windows. The padding and overlap (from a few candidates) and the L2
        are chosen on the validation recordings, then refitted on training + validation recordings.
        """

    /// The options, in the order the recorded command lists them.
    public static let options: OptionTable<Setup> = {
        let d = SoundClassifierParameters()
        typealias O = TaskOption<Setup>
        return OptionTable([
            TrainingOptions.out(\.name, default: d.name), TrainingOptions.test(),
            TrainingOptions.holdout(\.holdoutFraction, default: d.holdoutFraction),
            TrainingOptions.validation(\.validation),
            O(OptionDeclaration("--validation-data", value: "DIR|CSV", help: "Validation recordings (other speakers or devices) instead of --validation's split."),
              set: { s, v in s.parameters.validationData = v }, record: { s in s.parameters.validationData.map { ["--validation-data", $0] } ?? [] }),
            TrainingOptions.seed(\.seed, default: d.seed),
            O(OptionDeclaration("--embedding", value: "MODEL", help: "The speech embedding (default models/speech-embedding.bin)."),
              set: { s, v in s.parameters.embedding = v }, record: { s in s.parameters.embedding.map { ["--embedding", $0] } ?? [] }),
            O(OptionDeclaration("--overlap", value: "F", kind: .number, help: "Window overlap in [0, 1) (default: chosen on validation)."),
              set: { s, v in try fix(&s.parameters, overlap: try OptionText.double("--overlap", v)) },
              record: { s in s.parameters.windowings.count == 1 ? ["--overlap", "\(s.parameters.windowings[0].overlap)"] : [] }),
            O(OptionDeclaration("--pad-to", value: "SECONDS", kind: .number, help: "Pad shorter recordings to this length (default: chosen on validation)."),
              set: { s, v in try fix(&s.parameters, padTo: try OptionText.double("--pad-to", v)) },
              record: { s in s.parameters.windowings.count == 1 ? ["--pad-to", "\(Double(s.parameters.windowings[0].minimumSamples) / 16000)"] : [] }),
            TrainingOptions.l2(\.l2),
            TrainingOptions.int(OptionDeclaration("--max-iterations", value: "N", help: "L-BFGS iterations per fit (default \(d.maxIterations))."),
                                \.maxIterations, default: d.maxIterations),
            O(OptionDeclaration("--path-column", value: "NAME", help: "CSV column with audio paths (default path)."),
              set: { s, v in s.pathColumn = v }, record: { s in s.pathColumn == "path" ? [] : ["--path-column", s.pathColumn] }),
            TrainingOptions.labelColumn(),
            O(OptionDeclaration("--strict", help: "Stop at the first recording that cannot be decoded (else: skipped and named)."),
              set: { s, _ in s.parameters.strict = true }),
            TrainingOptions.threads(\.threads),
            TrainingOptions.cache(\.cacheDirectory),
        ])
    }()

    /// `--overlap` and `--pad-to` fix the windowing: one candidate, the given value and the other's default (the
    /// first candidate's) unless given too.
    static func fix(_ p: inout SoundClassifierParameters, overlap: Double? = nil, padTo: Double? = nil) throws {
        var w = p.windowings.count == 1 ? p.windowings[0] : SoundClassifierParameters().windowings[0]
        if let overlap {
            guard overlap >= 0, overlap < 1 else { throw OptionText.refuse("--overlap", "--overlap must be in [0, 1)") }
            w.overlap = overlap
        }
        if let padTo {
            guard padTo >= 0, padTo <= 3600 else { throw OptionText.refuse("--pad-to", "--pad-to must be in 0…3600 seconds") }
            w.minimumSamples = max(SoundWindows.samples, Int((padTo * 16000).rounded()))
        }
        p.windowings = [w]
    }

    public static var trainOptions: [OptionDeclaration] { options.declarations }
    public static var evaluationOptions: [OptionDeclaration] { ClassifierTasks.evaluationOptions }
    public static var predictionOptions: [OptionDeclaration] { [ClassifierTasks.top] }

    /// Label folders holding more audio files (.wav, .flac, .ogg) than others among their first files.
    public static func recognizes(data: String, values: OptionValues) -> Bool {
        let fm = FileManager.default
        func isDirectory(_ path: String) -> Bool {
            var d: ObjCBool = false
            return fm.fileExists(atPath: path, isDirectory: &d) && d.boolValue
        }
        guard isDirectory(data) else { return false }
        var audio = 0, other = 0
        for name in ((try? fm.contentsOfDirectory(atPath: data)) ?? []).sorted() where !name.hasPrefix(".") && isDirectory(data + "/" + name) {
            let files = ((try? fm.contentsOfDirectory(atPath: data + "/" + name)) ?? []).sorted().filter { !$0.hasPrefix(".") }
            for file in files.prefix(16) {
                if SoundFeatures.isAudio(file) { audio += 1 } else if !isDirectory(data + "/" + name + "/" + file) { other += 1 }
            }
        }
        return audio > other
    }

    public static func handles(model: Model) -> Bool { model.metadata.task == .soundClassifier }

    public static func predictsOn(file: String, model: Model) -> Bool { SoundFeatures.isAudio(file) }

    public static func train(_ request: TaskRequest) throws {
        let started = Date()
        let setup = try Setup.reading(request, options, parameters: SoundClassifierParameters())
        let (data, test) = setup.trainingData
        let r = try SoundClassifierTrainer(data: data, testData: test, parameters: setup.parameters)
            .train(progress: request.progress, cancellation: request.cancellation)
        try r.write(to: setup.output)
        let sound = r.model.metadata.sound ?? SoundConfig(minimumSamples: 0, overlap: 0)
        let windows = SoundClassifierParameters.Windowing(minimumSamples: sound.minimumSamples, overlap: sound.overlap)
        ClassifierTasks.printSummary(request, r, items: "recordings", details: ["  windows    " + windows.description],
                                     seconds: String(format: "features and search %.1f, head %.2f, total %.1f", r.featureSeconds,
                                                     r.fitSeconds, Date().timeIntervalSince(started)),
                                     output: setup.output)
    }

    public static func evaluate(_ request: TaskRequest, models: [String], data: String?) throws {
        try ClassifierTasks.evaluate(request, models: models, data: data)
    }

    /// Each file: its windows with their time ranges and top label, then the whole recording's labels.
    public static func predict(_ request: TaskRequest, model: Model, modelPath: String, inputs: [String]) throws {
        let options = try ClassifierTasks.rankingOptions(request.values)
        let classifier = try SoundClassifier(model: model, path: modelPath, threads: try ClassifierTasks.threads(request.values))
        var failures = ClassifierTasks.Failures(progress: request.progress)
        for file in inputs {
            do {
                let clip = try AudioDecoder.decode(file: file)
                if clip.isSilent { request.progress(.warning(clip.silenceNote(file: file))) }
                print(request, file, try classifier.classify(clip), options)
            } catch {
                failures.add(error)
            }
        }
        try failures.check(of: inputs.count, noun: "inputs", allFatal: true)
    }

    static func print(_ request: TaskRequest, _ file: String, _ r: SoundClassifier.Result, _ options: ClassificationOptions) {
        let top = Array(r.classifications.prefix(options.maximumCount ?? r.classifications.count))
        if request.values.has("--json") {
            func items(_ c: [Classification]) -> String {
                c.map { "{\"label\": \(TaskOutput.jsonString($0.identifier)), \"index\": \($0.index), \"probability\": \($0.confidence)}" }.joined(separator: ", ")
            }
            let windows = r.windows.map { w in
                "{\"start\": \(w.timeRange.lowerBound), \"end\": \(w.timeRange.upperBound), \"top\": [\(items(Array(w.classifications.prefix(top.count))))]}"
            }
            request.print("{\"file\": \(TaskOutput.jsonString(file)), \"duration\": \(r.duration), \"top\": [\(items(top))], \"windows\": [\(windows.joined(separator: ", "))]}")
            return
        }
        request.print(String(format: "%@ (%.2f s, %d windows)", file, r.duration, r.windows.count))
        for c in top { request.print(String(format: "  %7.4f  %@", c.confidence, c.identifier)) }
        for w in r.windows {
            guard let c = w.classifications.first else { continue }
            request.print(String(format: "    %6.2f–%6.2f s  %7.4f  %@", w.timeRange.lowerBound, w.timeRange.upperBound, c.confidence, c.identifier))
        }
    }
}
