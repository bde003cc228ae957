import Foundation
import MLToolCore
import MLToolData
import MLToolTrain

extension CLI {
    static let train = CommandSpec(
        name: "train", abstract: "Train an image or text classifier from label folders or a CSV.",
        arguments: "DATA",
        discussion: """
        DATA is a folder whose subfolders are the labels (JPEG/PNG files below them), or a CSV with a path and a
        label column. A stratified holdout (--holdout, default 0.2) is kept out of training and recorded in the
        model, so `mltool eval` re-evaluates on it; or give --test. Features come from a frozen extractor
        (default EfficientNet-Lite0) through a content-addressed cache; the head is multinomial logistic
        regression with L2, chosen on a validation split. Same data, seed and threads give a byte-identical model.

        Text (told from the content, or --task text): label folders of .txt files (one document each), or a CSV,
        TSV or JSON Lines file with --text-column and --label-column. Features are word n-grams (and optional
        character n-grams) weighted by TF-IDF; the classifier is max-entropy (the same regression, on sparse rows),
        fitted by seeded SGD: the L2 strength is chosen on the validation split (3 of every 5 epochs per value),
        then the winner is refitted on training + validation documents. --max-iterations adds L-BFGS after SGD;
        --epochs 0 --max-iterations N fits by L-BFGS alone.
        """,
        options: [
            OptionSpec("--out", short: "-o", value: "PATH", help: "Output model (default ./model.bin)."),
            OptionSpec("--test", value: "DIR|CSV", help: "Held-out test data (instead of --holdout)."),
            OptionSpec("--holdout", value: "F", help: "Fraction held out for testing (default 0.2)."),
            OptionSpec("--validation", value: "auto|F|none", help: "Validation split (default auto: Create ML's rule)."),
            OptionSpec("--seed", value: "N", help: "Seed for splits and augmentation (default 42)."),
            OptionSpec("--extractor", value: "MODEL", help: "Feature extractor (default models/efficientnet-lite0.bin)."),
            OptionSpec("--feature-layer", value: "NAME", help: "Extractor tensor to use as features."),
            OptionSpec("--l2", value: "auto|X", help: "L2 strength, or auto (chosen on validation; default)."),
            OptionSpec("--max-iterations", value: "N", help: "L-BFGS iterations per L2 value (default 500; text 0: SGD only)."),
            OptionSpec("--epochs", value: "N", help: "Text: seeded SGD epochs (default 5), before any L-BFGS iterations."),
            OptionSpec("--early-stopping", value: "N", help: "Stop after N iterations without validation improvement."),
            OptionSpec("--balance", help: "Weight classes inversely to their frequency."),
            OptionSpec("--augment", value: "LIST", help: "Augment training images: flip,crop,rotate,exposure,blur,noise."),
            OptionSpec("--path-column", value: "NAME", help: "CSV column with image paths (default path)."),
            OptionSpec("--label-column", value: "NAME", help: "CSV column with labels (default label)."),
            OptionSpec("--strict", help: "Stop at the first image that cannot be decoded."),
            OptionSpec("--max-pixels", value: "N", help: "Refuse larger images (default 64000000)."),
            OptionSpec("--task", value: "image|text", help: "Override the task told from DATA's content."),
            OptionSpec("--text-column", value: "NAME", help: "Text: CSV column with the documents (default text)."),
            OptionSpec("--ngrams", value: "MIN-MAX", help: "Text: word n-gram lengths (default 1-2)."),
            OptionSpec("--char-ngrams", value: "MIN-MAX", help: "Text: also character n-grams, e.g. 3-5 (default off)."),
            OptionSpec("--min-count", value: "N", help: "Text: keep terms found in at least N documents (default 2)."),
            OptionSpec("--weighting", value: "tfidf|count|binary", help: "Text: feature weighting (default tfidf)."),
            OptionSpec("--hash-bits", value: "N", help: "Text: hash terms into 2^N buckets instead of a vocabulary."),
            OptionSpec("--stop-words", value: "FILE", help: "Text: words to drop, one per line (default none)."),
            OptionSpec("--threads", value: "T", help: "Threads (default: all cores)."),
            OptionSpec("--quiet", short: "-q", help: "No progress output."),
        ]
    ) { args in
        guard args.positionals.count == 1 else {
            throw CLIError.usage(command: "train", message: "expected one DATA folder or CSV")
        }
        let task = args.string("--task") ?? (TextDataset.looksLikeText(args.positionals[0],
                                                                      textColumn: args.string("--text-column") ?? "text") ? "text" : "image")
        switch task {
        case "text": try TextTraining(args: args).run()
        case "image": try ImageTraining(args: args).run()
        default: throw CLIError.usage(command: "train", message: "--task must be image or text")
        }
    }
}

extension CLI {
    /// `--l2 auto|X` for both tasks.
    static func l2Option(_ args: ParsedArguments) throws -> LogisticRegressionOptions.L2 {
        let text = args.string("--l2") ?? "auto"
        if text == "auto" { return .auto }
        guard let v = Double(text), v >= 0, v.isFinite else {
            throw CLIError.usage(command: "train", message: "--l2 must be auto or a number ≥ 0")
        }
        return .fixed(v)
    }
}
