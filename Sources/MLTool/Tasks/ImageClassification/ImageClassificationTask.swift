import Foundation
import MLToolCore
import MLToolData

/// Image classification (Create ML's `MLImageClassifier`): label folders of photos, or a table of paths and labels;
/// frozen-extractor features through a content-addressed cache and a multinomial logistic-regression head.
public enum ImageClassificationTask: TaskKind {
    public typealias Setup = TrainingSetup<ImageClassifierParameters>
    public static let name = "image"
    public static let title = "Image classification"
    public static let trainingHelp = """
        DATA is a folder whose subfolders are the labels (JPEG/PNG files below them), or a CSV with a path and a
        label column. Features come from a frozen extractor (default EfficientNet-Lite0) through a content-addressed
        cache; the head is multinomial logistic regression with L2, chosen on a validation split. On a cluster: run
        `mltool train DATA --features-only --shard I/N` (or --shard auto in a Slurm array or a Kubernetes Indexed Job)
        with the final train's flags and a shared --cache, then the final train (docs/SCALE.md).
        """

    /// The options, in the order the recorded command lists them.
    public static let options: OptionTable<Setup> = {
        let d = ImageClassifierParameters()
        typealias O = TaskOption<Setup>
        return OptionTable([
            TrainingOptions.out(\.name, default: d.name), TrainingOptions.test(),
            TrainingOptions.holdout(\.holdoutFraction, default: d.holdoutFraction),
            TrainingOptions.validation(\.validation), TrainingOptions.seed(\.seed, default: d.seed),
            O(OptionDeclaration("--extractor", value: "MODEL", help: "Feature extractor (default models/efficientnet-lite0.bin)."),
              set: { s, v in s.parameters.extractor = v }, record: { s in s.parameters.extractor.map { ["--extractor", $0] } ?? [] }),
            O(OptionDeclaration("--feature-layer", value: "NAME", help: "Extractor tensor to use as features."),
              set: { s, v in s.parameters.featureLayer = v },
              record: { s in s.parameters.featureLayer.map { ["--feature-layer", $0] } ?? [] }),
            TrainingOptions.l2(\.l2),
            TrainingOptions.int(OptionDeclaration("--max-iterations", value: "N", help: "L-BFGS iterations per L2 value (default \(d.maxIterations))."),
                                \.maxIterations, default: d.maxIterations),
            TrainingOptions.earlyStopping(\.earlyStoppingPatience), TrainingOptions.balance(\.balanceClasses),
            TrainingOptions.int(OptionDeclaration("--fine-tune", value: "N", help: "Also train the extractor's last N convolutions (default 0: frozen)."),
                                \.fineTune, default: d.fineTune),
            TrainingOptions.int(OptionDeclaration("--fine-tune-epochs", value: "N", help: "Epochs of --fine-tune (default \(d.fineTuning.epochs))."),
                                \.fineTuning.epochs, default: d.fineTuning.epochs),
            O(OptionDeclaration("--augment", value: "LIST", help: "Augment training images: flip,crop,rotate,exposure,blur,noise."),
              set: { s, v in s.parameters.augmentations = try Augmentation.parseList(v) }, record: { s in
                s.parameters.augmentations.isEmpty ? [] : ["--augment", s.parameters.augmentations.map(\.rawValue).joined(separator: ",")]
            }),
            O(OptionDeclaration("--path-column", value: "NAME", help: "CSV column with image paths (default path)."),
              set: { s, v in s.pathColumn = v }, record: { s in s.pathColumn == "path" ? [] : ["--path-column", s.pathColumn] }),
            TrainingOptions.labelColumn(),
            TrainingOptions.strict(\.strict),
            TrainingOptions.int(OptionDeclaration("--max-pixels", value: "N", help: "Refuse larger images (default \(d.maxPixels))."),
                                \.maxPixels, default: d.maxPixels, recorded: false),
            TrainingOptions.threads(\.threads),
            TrainingOptions.cache(\.cacheDirectory),
            O(OptionDeclaration("--memory", value: "SIZE", help: "Memory for the head, e.g. 2G (default half the machine's); past it the head trains out of core."),
              set: { s, v in s.parameters.memoryBudget = try ParameterText.memory(v) }),
            // Modes of the command, read by `train`: they make no model.
            O(OptionDeclaration("--features-only", help: "Fill the feature cache and stop (no model); see --shard and docs/SCALE.md."), set: { _, _ in }),
            O(OptionDeclaration("--shard", value: "I/N|auto", help: "With --features-only: only shard I of N (auto: from Slurm, Kubernetes or RANK/WORLD_SIZE)."),
              set: { _, _ in }),
            O(OptionDeclaration("--manifest", value: "PATH", help: "With --features-only: the shard's JSON manifest (default <cache>/shards/…)."),
              set: { _, _ in }),
        ])
    }()

    public static var trainOptions: [OptionDeclaration] { options.declarations }
    public static var evaluationOptions: [OptionDeclaration] { ClassifierTasks.evaluationOptions }
    public static var predictionOptions: [OptionDeclaration] { [ClassifierTasks.top] }

    /// Anything: label folders or a table of paths (the first task of the registry, asked last).
    public static func recognizes(data: String, values: OptionValues) -> Bool { true }

    public static func handles(model: Model) -> Bool {
        [.imageClassifier, .network].contains(model.metadata.task) && model.metadata.detection == nil
    }

    public static func train(_ request: TaskRequest) throws {
        let started = Date()
        let setup = try Setup.reading(request, options, parameters: ImageClassifierParameters())
        let (data, test) = setup.trainingData
        let trainer = ImageClassifierTrainer(data: data, testData: test, parameters: setup.parameters)
        let v = request.values
        if v.has("--features-only") {
            let shard = try v.string("--shard").map { try ShardSpec.parse($0) } ?? .whole
            let r = try trainer.extractFeatures(shard: shard, manifest: v.string("--manifest"), progress: request.progress)
            let s = r.manifest
            request.print("shard \(s.shard)/\(s.shards) (\(s.origin)): \(s.itemsOwned) of \(s.itemsInData) images, \(s.extracted) entries extracted, \(s.cached) cached")
            request.print("  manifest   \(r.manifestPath)")
            return
        } else if let o = ["--shard", "--manifest"].first(where: v.has) {
            throw PipelineError.invalidParameter(name: o, reason: "\(o) needs --features-only (a shard fills the cache; the final train reads it all)")
        }
        let r = try trainer.train(progress: request.progress, cancellation: request.cancellation)
        try r.write(to: setup.output)
        ClassifierTasks.printSummary(request, r, items: "images",
                                     seconds: String(format: "features %.1f (%d extracted), head %.2f%@, total %.1f", r.featureSeconds,
                                                     r.extractedCount, r.fitSeconds, r.outOfCore ? " (out of core)" : "",
                                                     Date().timeIntervalSince(started)),
                                     output: setup.output)
    }

    public static func evaluate(_ request: TaskRequest, models: [String], data: String?) throws {
        try ClassifierTasks.evaluate(request, models: models, data: data)
    }

    public static func predict(_ request: TaskRequest, model: Model, modelPath: String, inputs: [String]) throws {
        if request.values.has("--text") {
            throw PipelineError.invalidParameter(name: "--text", reason: "--text needs a text model; \(modelPath) is a \(model.metadata.task.rawValue) model")
        }
        let options = try ClassifierTasks.rankingOptions(request.values)
        let classifier = try ImageClassifier(model: model, path: modelPath, threads: try ClassifierTasks.threads(request.values))
        var failures = ClassifierTasks.Failures(progress: request.progress)
        // Batches of 16 files: each batch decodes on every core and is one run of the network.
        for start in stride(from: 0, to: inputs.count, by: 16) {
            let files = Array(inputs[start..<min(inputs.count, start + 16)])
            let results = classifier.classify(batch: files.map { .path($0) }, options: options)
            for (file, result) in zip(files, results) {
                switch result {
                case .success(let ranked): ClassifierTasks.printPrediction(request, file, ranked)
                case .failure(let error): failures.add(error)
                }
            }
        }
        try failures.check(of: inputs.count, noun: "inputs", allFatal: true)
    }
}
