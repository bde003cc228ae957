import Foundation
import MLTool

extension CLI {
    /// The defaults the help shows are the trainers' own.
    private static let image = ImageClassifierParameters(), text = TextClassifierParameters(), detect = ObjectDetectorParameters()
    private static let tagger = WordTaggerPipelineParameters()

    static let train = CommandSpec(
        name: "train", abstract: "Train an image or text classifier, an object detector or a word tagger from labelled data.",
        arguments: "DATA",
        discussion: """
        DATA is a folder whose subfolders are the labels (JPEG/PNG files below them), or a CSV with a path and a
        label column. A stratified holdout (--holdout, default 0.2) is kept out of training and recorded in the
        model, so `mltool eval` re-evaluates on it; or give --test. Features come from a frozen extractor
        (default EfficientNet-Lite0) through a content-addressed cache; the head is multinomial logistic
        regression with L2, chosen on a validation split. Same data, seed and threads give a byte-identical model.
        On a cluster: run `mltool train DATA --features-only --shard I/N` (or --shard auto in a Slurm array or a
        Kubernetes Indexed Job) with the final train's flags and a shared --cache, then the final train (docs/SCALE.md).

        Text (told from the content, or --task text): label folders of .txt files (one document each), or a CSV,
        TSV or JSON Lines file with --text-column and --label-column. Features are word n-grams (and optional
        character n-grams) weighted by TF-IDF; the classifier is max-entropy (the same regression, on sparse rows),
        fitted by seeded SGD: the L2 strength is chosen on the validation split (3 of every 5 epochs per value),
        then the winner is refitted on training + validation documents. --max-iterations adds L-BFGS after SGD;
        --epochs 0 --max-iterations N fits by L-BFGS alone.

        Object detection (told from annotations, or --task detect): a Create ML folder (photos + one JSON file), a
        Pascal VOC folder (images/ + annotations/*.xml), YOLO txt (images/ + labels/ + classes.txt) or a CSV
        filename,width,height,class,xmin,ymin,xmax,ymax. Photos are letterboxed to \(detect.inputSize)×\(detect.inputSize); frozen
        EfficientNet-Lite0 feature maps at strides \(detect.featureMaps.map { String($0.stride) }.joined(separator: " and ")) (cached) feed a small anchor-free head per map,
        trained with seeded augmentation (\(detect.augmentedCopies) copies per photo); validation mAP@0.5 is printed per epoch.

        Word tagging (told from the file, or --task tagger): CoNLL-U (.conllu; --tag-column), two-column CoNLL
        (.conll, .bio, .iob, .bioes: token and tag, BIO/BIOES tags give entity scores) or Create ML's JSON
        ([{"tokens": [...], "labels": [...]}]). An averaged perceptron over lexical features with Viterbi decoding
        (\(tagger.tagger.epochs) epochs at most, the best on validation kept); the model carries its tokenizer.
        """,
        options: [
            OptionSpec("--out", short: "-o", value: "PATH", help: "Output model (default ./model.bin)."),
            OptionSpec("--test", value: "DIR|CSV", help: "Held-out test data (instead of --holdout)."),
            OptionSpec("--holdout", value: "F", help: "Fraction held out for testing (default \(image.holdoutFraction))."),
            OptionSpec("--validation", value: "auto|F|none", help: "Validation split (default auto: Create ML's rule)."),
            OptionSpec("--seed", value: "N", help: "Seed for splits and augmentation (default \(image.seed))."),
            OptionSpec("--extractor", value: "MODEL", help: "Feature extractor (default models/efficientnet-lite0.bin)."),
            OptionSpec("--feature-layer", value: "NAME", help: "Extractor tensor to use as features."),
            OptionSpec("--l2", value: "auto|X", help: "L2 strength, or auto (chosen on validation; default)."),
            OptionSpec("--max-iterations", value: "N", help: "L-BFGS iterations per L2 value (default \(image.maxIterations); text \(text.maxIterations): SGD only)."),
            OptionSpec("--epochs", value: "N", help: "Text: seeded SGD epochs (default \(text.epochs)), before any L-BFGS iterations; detect: head epochs (default \(detect.epochs)); tagger: at most (default \(tagger.tagger.epochs))."),
            OptionSpec("--early-stopping", value: "N", help: "Stop after N iterations without validation improvement."),
            OptionSpec("--balance", help: "Weight classes inversely to their frequency."),
            OptionSpec("--augment", value: "LIST", help: "Augment training images: flip,crop,rotate,exposure,blur,noise."),
            OptionSpec("--path-column", value: "NAME", help: "CSV column with image paths (default path)."),
            OptionSpec("--label-column", value: "NAME", help: "CSV column with labels (default label)."),
            OptionSpec("--strict", help: "Stop at the first image that cannot be decoded."),
            OptionSpec("--max-pixels", value: "N", help: "Refuse larger images (default \(image.maxPixels))."),
            OptionSpec("--task", value: "image|text|detect|tagger", help: "Override the task told from DATA's content."),
            OptionSpec("--tag-column", value: "upos|xpos|misc:KEY", help: "Tagger: the CoNLL-U column to learn (default \(tagger.tagColumn))."),
            OptionSpec("--text-column", value: "NAME", help: "Text: CSV column with the documents (default text)."),
            OptionSpec("--ngrams", value: "MIN-MAX", help: "Text: word n-gram lengths (default \(text.wordNgrams.map(String.init).joined(separator: "-")))."),
            OptionSpec("--char-ngrams", value: "MIN-MAX", help: "Text: also character n-grams within words, e.g. 3-5 (default off; \(text.shortTextCharNgrams.map(String.init).joined(separator: "-")) for short texts, see below)."),
            OptionSpec("--min-count", value: "N", help: "Text: keep terms found in at least N documents (default \(text.minCount); \(text.shortTextMinCount) for short texts: median ≤ \(text.shortTextMedianWords) words per document. Either flag turns that rule off)."),
            OptionSpec("--weighting", value: "tfidf|count|binary", help: "Text: feature weighting (default tfidf)."),
            OptionSpec("--hash-bits", value: "N", help: "Text: hash terms into 2^N buckets instead of a vocabulary."),
            OptionSpec("--stop-words", value: "FILE", help: "Text: words to drop, one per line (default none)."),
            OptionSpec("--threads", value: "T", help: "Threads (default: all cores)."),
            OptionSpec("--cache", value: "DIR", help: "Images: the feature cache's home (default $MLTOOL_CACHE, else ~/.cache/mltool)."),
            OptionSpec("--features-only", help: "Images: fill the feature cache and stop (no model); see --shard and docs/SCALE.md."),
            OptionSpec("--shard", value: "I/N|auto", help: "With --features-only: only shard I of N (auto: from Slurm, Kubernetes or RANK/WORLD_SIZE)."),
            OptionSpec("--manifest", value: "PATH", help: "With --features-only: the shard's JSON manifest (default <cache>/shards/…)."),
            OptionSpec("--memory", value: "SIZE", help: "Images: memory for the head, e.g. 2G (default half the machine's); past it the head trains out of core."),
            OptionSpec("--quiet", short: "-q", help: "No progress output."), noProvenance,
        ]
    ) { args in
        guard args.positionals.count == 1 else {
            throw CLIError.usage(command: "train", message: "expected one DATA folder or CSV")
        }
        let data = TrainingData.path(args.positionals[0], pathColumn: args.string("--path-column") ?? "path",
                                     textColumn: args.string("--text-column") ?? "text",
                                     labelColumn: args.string("--label-column") ?? "label")
        let path = args.positionals[0]
        let told = WordTaggerTraining.looksLikeTaggedData(path) ? "tagger"
            : ObjectDetectorTrainer.looksLikeDetectionData(path) ? "detect" : data.isText ? "text" : "image"
        let task = args.string("--task") ?? told
        if task != "image", let o = ["--features-only", "--shard", "--manifest", "--cache", "--memory"].first(where: args.has) {
            throw CLIError.notSupported("\(o) for \(task) data (sharded feature extraction is for image classifiers)")
        }
        switch task {
        case "text": try trainText(args, data)
        case "image": try trainImage(args, data)
        case "detect": try trainDetector(args, path)
        case "tagger": try trainTagger(args, path)
        default: throw CLIError.usage(command: "train", message: "--task must be image, text, detect or tagger")
        }
    }

    /// Options that only mean something for images.
    static let imageOnlyOptions = ["--extractor", "--feature-layer", "--augment", "--path-column", "--strict", "--max-pixels"]

    static func trainImage(_ args: ParsedArguments, _ data: TrainingData) throws {
        let started = Date()
        var p = ImageClassifierParameters()
        p.seed = try seed(args, default: p.seed)
        p.validation = try ValidationRule.parse(args.string("--validation") ?? "auto")
        p.extractor = args.string("--extractor")
        p.featureLayer = args.string("--feature-layer")
        p.l2 = try ParameterText.l2(args.string("--l2"))
        p.maxIterations = try args.int("--max-iterations", default: p.maxIterations)
        p.balanceClasses = args.has("--balance")
        p.earlyStoppingPatience = try args.string("--early-stopping").map { _ in try args.int("--early-stopping", default: 20) }
        p.augmentations = try args.string("--augment").map { try Augmentation.parseList($0) } ?? []
        p.strict = args.has("--strict")
        p.maxPixels = try args.int("--max-pixels", default: p.maxPixels)
        p.threads = try args.int("--threads", default: p.threads)
        p.cacheDirectory = args.string("--cache").map { $0 + "/features" }
        p.memoryBudget = try args.string("--memory").map { try ParameterText.memory($0) }
        let test = args.string("--test").map { TrainingData.path($0, pathColumn: data.pathColumn, labelColumn: data.labelColumn) }
        if test == nil { p.holdoutFraction = try holdout(args, default: p.holdoutFraction) }
        let out = args.string("--out") ?? "model.bin"
        p.name = URL(fileURLWithPath: out).deletingPathExtension().lastPathComponent
        let printer = EventPrinter(quiet: args.has("--quiet"), row: EventPrinter.imageRow)
        let trainer = ImageClassifierTrainer(data: data, testData: test, parameters: p)
        if args.has("--features-only") {
            let r = try trainer.extractFeatures(shard: try args.string("--shard").map { try ShardSpec.parse($0) } ?? .whole,
                                                manifest: args.string("--manifest"), progress: printer.handle), s = r.manifest
            print("shard \(s.shard)/\(s.shards) (\(s.origin)): \(s.itemsOwned) of \(s.itemsInData) images, \(s.extracted) entries extracted, \(s.cached) cached")
            return print("  manifest   \(r.manifestPath)")
        } else if let o = ["--shard", "--manifest"].first(where: args.has) {
            throw CLIError.usage(command: "train", message: "\(o) needs --features-only (a shard fills the cache; the final train reads it all)")
        }
        let r = try trainer.train(progress: printer.handle)
        try r.write(to: out)
        print("trained \(r.model.metadata.labels.count) classes on \(r.trainCount) images (\(r.validationCount) validation, \(r.holdoutCount) holdout)")
        print(accuracyLine(r))
        print(String(format: "  l2 %.0e, %d iterations (%@)", r.l2, r.iterations, r.stopReason.rawValue))
        print(String(format: "  seconds    features %.1f (%d extracted), head %.2f%@, total %.1f", r.featureSeconds, r.extractedCount,
                     r.fitSeconds, r.outOfCore ? " (out of core)" : "", Date().timeIntervalSince(started)))
        print("  wrote      \(out)")
    }

    static func trainText(_ args: ParsedArguments, _ data: TrainingData) throws {
        let started = Date()
        if let o = imageOnlyOptions.first(where: args.has) {
            throw CLIError.usage(command: "train", message: "\(o) applies to image data; \(args.positionals[0]) is text")
        }
        var p = TextClassifierParameters()
        p.seed = try seed(args, default: p.seed)
        p.validation = try ValidationRule.parse(args.string("--validation") ?? "auto")
        p.wordNgrams = try ParameterText.range(args.string("--ngrams"), option: "--ngrams") ?? p.wordNgrams
        p.charNgrams = try ParameterText.range(args.string("--char-ngrams"), option: "--char-ngrams")
        if args.has("--char-ngrams") || args.has("--min-count") { p.shortTexts = .never }
        p.minCount = try args.int("--min-count", default: p.minCount)
        guard p.minCount >= 1 else { throw CLIError.usage(command: "train", message: "--min-count must be ≥ 1") }
        p.weighting = args.string("--weighting") ?? p.weighting
        guard ["tfidf", "count", "binary"].contains(p.weighting) else {
            throw CLIError.usage(command: "train", message: "--weighting must be tfidf, count or binary")
        }
        if args.has("--hash-bits") {
            let bits = try args.int("--hash-bits", default: 20)
            guard (1...24).contains(bits) else { throw CLIError.usage(command: "train", message: "--hash-bits must be in 1...24") }
            p.hashBits = bits
        }
        if let file = args.string("--stop-words") {
            p.stopWords = try TextDataset.readDocument(file).split(whereSeparator: \.isNewline)
                .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty && !$0.hasPrefix("#") }
        }
        p.l2 = try ParameterText.l2(args.string("--l2"))
        p.epochs = try args.int("--epochs", default: p.epochs)
        p.maxIterations = try args.int("--max-iterations", default: p.maxIterations)
        p.balanceClasses = args.has("--balance")
        p.earlyStoppingPatience = try args.string("--early-stopping").map { _ in try args.int("--early-stopping", default: 20) }
        let test = args.string("--test").map { TrainingData.path($0, textColumn: data.textColumn, labelColumn: data.labelColumn) }
        if test == nil { p.holdoutFraction = try holdout(args, default: p.holdoutFraction) }
        let out = args.string("--out") ?? "model.bin"
        p.name = URL(fileURLWithPath: out).deletingPathExtension().lastPathComponent
        let printer = EventPrinter(quiet: args.has("--quiet"), row: EventPrinter.textRow)
        let r = try TextClassifierTrainer(data: data, testData: test, parameters: p).train(progress: printer.handle)
        try r.write(to: out)
        printer.handle(.phase("write", seconds: Date().timeIntervalSince(started) - r.totalSeconds))
        let config = r.model.metadata.text ?? TextConfig()
        print("trained \(r.model.metadata.labels.count) classes on \(r.trainCount) documents (\(r.validationCount) validation, \(r.holdoutCount) holdout)")
        print("  features   \(r.featureCount ?? 0) \(config.hashBits == nil ? "terms" : "hashed buckets"), \(config.weighting), word n-grams \(config.wordNgrams)\(config.charNgrams.map { ", char n-grams \($0)" } ?? "")")
        print(accuracyLine(r))
        print(String(format: "  l2 %.0e, %d iterations (%@)", r.l2, r.iterations, r.stopReason.rawValue))
        print(String(format: "  seconds    features %.2f, fit %.2f, total %.2f", r.featureSeconds, r.fitSeconds,
                     Date().timeIntervalSince(started)))
        print("  wrote      \(out)")
    }

    static func trainDetector(_ args: ParsedArguments, _ path: String) throws {
        var p = ObjectDetectorParameters()
        p.seed = try seed(args, default: p.seed)
        p.validation = try ValidationRule.parse(args.string("--validation") ?? "auto")
        p.extractor = args.string("--extractor")
        p.epochs = try args.int("--epochs", default: p.epochs)
        p.threads = try args.int("--threads", default: p.threads)
        p.maxPixels = try args.int("--max-pixels", default: p.maxPixels)
        if let a = args.string("--augment") {
            guard a == "none" else {
                throw CLIError.usage(command: "train", message: "a detector's augmentation (zoom, mirror, brightness, saturation) is on by default; --augment none turns it off")
            }
            p.augmentedCopies = 0
        }
        let test = args.string("--test")
        if test == nil { p.holdoutFraction = try holdout(args, default: p.holdoutFraction) }
        let out = args.string("--out") ?? "model.bin"
        p.name = URL(fileURLWithPath: out).deletingPathExtension().lastPathComponent
        let printer = EventPrinter(quiet: args.has("--quiet"))
        let r = try ObjectDetectorTrainer(data: path, test: test, parameters: p).train(progress: printer.handle)
        try r.write(to: out)
        print("trained a detector for \(r.model.metadata.labels.count) classes on \(r.trainCount) photos (\(r.sampleCount) with augmented copies; \(r.validationCount) validation, \(r.holdoutCount) \(test == nil ? "holdout" : "test"))")
        if let e = r.evaluation {
            print(String(format: "  mAP        @0.5 %.4f, @0.5:0.95 %.4f (%@)", e.mAP50, e.mAP50to95, test == nil ? "holdout" : "test"))
        }
        print(String(format: "  seconds    features %.1f (%d extracted), heads %.1f, total %.1f", r.featureSeconds, r.extractedCount,
                     r.fitSeconds, r.totalSeconds))
        print("  wrote      \(out)")
    }

    static func trainTagger(_ args: ParsedArguments, _ path: String) throws {
        var p = WordTaggerPipelineParameters()
        p.tagger.seed = try seed(args, default: p.tagger.seed)
        p.tagger.validation = try ValidationRule.parse(args.string("--validation") ?? "auto")
        p.tagger.epochs = try args.int("--epochs", default: p.tagger.epochs)
        p.tagColumn = try TagColumn(parsing: args.string("--tag-column") ?? p.tagColumn.description)
        let test = args.string("--test")
        if test == nil { p.holdoutFraction = try holdout(args, default: p.holdoutFraction) }
        let out = args.string("--out") ?? "model.bin"
        p.name = URL(fileURLWithPath: out).deletingPathExtension().lastPathComponent
        let r = try WordTaggerTraining(data: path, test: test, parameters: p).train(progress: EventPrinter(quiet: args.has("--quiet")).handle)
        try r.write(to: out)
        print("trained a word tagger for \(r.model.metadata.labels.count) tags on \(r.trainSentences) sentences (\(r.validationSentences) validation, \(r.testSentences) \(test == nil ? "holdout" : "test"))")
        print(String(format: "  accuracy   train %.4f, validation %@, %@ %@", r.model.metadata.metrics["train.accuracy"] ?? 0,
                     r.model.metadata.metrics["validation.accuracy"].map { String(format: "%.4f", $0) } ?? "-",
                     test == nil ? "holdout" : "test", r.test.map { String(format: "%.4f", $0.accuracy) } ?? "-"))
        if let e = r.test?.entities { print(String(format: "  entities   precision %.4f, recall %.4f, F1 %.4f", e.precision, e.recall, e.f1)) }
        print(String(format: "  epochs     best %d of %d, %.1f s", r.chosenEpoch, r.epochs.count, r.seconds))
        print("  wrote      \(out)")
    }

    static func accuracyLine(_ r: TrainingResult) -> String {
        func pct(_ v: Double?) -> String { v.map { String(format: "%.4f", $0) } ?? "-" }
        return "  accuracy   train \(pct(r.metrics["train.accuracy"])), validation \(pct(r.metrics["validation.accuracy"])), holdout \(pct(r.metrics["holdout.accuracy"]))"
    }

    static func seed(_ args: ParsedArguments, default d: UInt64) throws -> UInt64 {
        let s = try args.int("--seed", default: Int(d))
        guard s >= 0 else { throw CLIError.usage(command: "train", message: "--seed must be ≥ 0") }
        return UInt64(s)
    }

    static func holdout(_ args: ParsedArguments, default d: Double) throws -> Double {
        let fraction = try args.double("--holdout", default: d)
        guard fraction >= 0, fraction < 1 else { throw CLIError.usage(command: "train", message: "--holdout must be in [0, 1)") }
        return fraction
    }
}
