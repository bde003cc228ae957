// Generated from docs/API.md by `make api-docs` (Examples/examples.py): every ```swift block of the page,
// wrapped in a function, and a runner that calls them in order in the current folder. Do not edit.
import Foundation
import MLTool

/// docs/API.md:71, Load and inspect a model — `MLModel`
func example1() throws {
#sourceLocation(file: "docs/API.md", line: 71)
    let model = try Model(contentsOf: URL(fileURLWithPath: "models/efficientnet-lite0.bin"))
    print(model.metadata.task, model.metadata.labels.count, model.parameterCount)
    let summary = try ModelSummary(path: "models/efficientnet-lite0.bin")   // what `mltool info` prints
    print(summary.text(path: "models/efficientnet-lite0.bin"))
    print(try summary.json())
#sourceLocation()
}

/// docs/API.md:94, Classify an image — `VNClassifyImageRequest`
func example2() throws {
#sourceLocation(file: "docs/API.md", line: 94)
    let classifier = try ImageClassifier(contentsOf: URL(fileURLWithPath: "models/efficientnet-lite0.bin"))
    for observation in try classifier.classify(contentsOf: URL(fileURLWithPath: "cat.jpg")).prefix(5) {
        print(observation.identifier, observation.confidence)
    }
#sourceLocation()
}

/// docs/API.md:118, Classify with your own model — `VNCoreMLRequest`
func example3() throws {
#sourceLocation(file: "docs/API.md", line: 118)
    let classifier = try ImageClassifier(contentsOf: URL(fileURLWithPath: "Clothes.bin"))
    let options = ClassificationOptions(maximumCount: 1, minimumConfidence: 0.5)
    if let best = try classifier.classify(contentsOf: URL(fileURLWithPath: "bag.png"), options: options).first {
        print(best.identifier, best.confidence)
    }

    // JPEG or PNG bytes, from a request body say; `name` is what errors call them.
    let upload = try Data(contentsOf: URL(fileURLWithPath: "bag.png"))
    print(try classifier.classify(data: upload, name: "upload").first?.identifier ?? "none")

    // Pixels you already have: RGB bytes, row-major.
    let gray = RGBImage(width: 28, height: 28, pixels: [UInt8](repeating: 128, count: 28 * 28 * 3))
    print(try classifier.classify(image: gray).first?.identifier ?? "none")
#sourceLocation()
}

/// docs/API.md:145, Classify text — `NLModel`
func example4() throws {
#sourceLocation(file: "docs/API.md", line: 145)
    let model = try TextClassifier(contentsOf: URL(fileURLWithPath: "Reviews.bin"))
    let label: String? = try model.predictedLabel(for: "The battery died after two days.")
    let hypotheses: [String: Double] = try model.predictedLabelHypotheses(for: "The battery died after two days.",
                                                                          maximumCount: 2)
    print(label ?? "none", hypotheses)

    // Many strings at once (one vectorizer pass): n × classes probabilities, row-major, in `model.labels` order.
    let probabilities = try model.probabilities(["Great screen, fast and light.", "It broke within a week."])
    print(model.labels, probabilities)
#sourceLocation()
}

/// docs/API.md:174, Train an image classifier — `MLImageClassifier`
func example5() throws {
#sourceLocation(file: "docs/API.md", line: 174)
    var parameters = ImageClassifierParameters()
    parameters.maxIterations = 50
    parameters.augmentations = [.flip]
    let trainer = ImageClassifierTrainer(data: .labeledDirectories(at: URL(fileURLWithPath: "Clothes")),
                                         parameters: parameters)
    let result = try trainer.train()
    print(result.metrics["train.accuracy"] ?? .nan, result.metrics["holdout.accuracy"] ?? .nan)
    try result.write(to: "Clothes.bin")

    // Evaluate on other labelled data (without `dataPath`: on the holdout recorded in the model).
    let evaluation = try Evaluator(modelPaths: ["Clothes.bin"], dataPath: "Clothes-test").run()
    print(evaluation.reports[0].accuracy, evaluation.reports[0].confusion)
    try evaluation.writeReport(to: "Clothes-report.html")
#sourceLocation()
}

/// docs/API.md:212, Train a text classifier — `MLTextClassifier`
func example6() throws {
#sourceLocation(file: "docs/API.md", line: 212)
    var parameters = TextClassifierParameters()
    parameters.holdoutFraction = 0.2            // the testing split: kept out, measured, recorded in the model
    parameters.minCount = 1
    let data = TrainingData.path("reviews.csv", textColumn: "text", labelColumn: "label")
    let result = try TextClassifierTrainer(data: data, parameters: parameters).train()
    print(result.metrics["holdout.accuracy"] ?? .nan)
    try result.write(to: "Reviews.bin")
#sourceLocation()
}

/// docs/API.md:243, Tag words — `MLWordTagger`, `NLTagger`
func example7() throws {
#sourceLocation(file: "docs/API.md", line: 243)
    var parameters = WordTaggerPipelineParameters()
    parameters.holdoutFraction = 0.2            // sentences kept out and scored (or pass test: a tagged file)
    let result = try WordTaggerTraining(data: "names.bio", parameters: parameters).train()
    print(result.test?.accuracy ?? .nan, result.test?.entities?.f1 ?? .nan)
    try result.write(to: "Names.bin")

    let model = try Model(contentsOf: URL(fileURLWithPath: "Names.bin"))
    for token in try WordTagging.tag(model: model, texts: ["Tim Cook visited Paris."])[0] {
        print(token.span.text, token.tag, token.span.scalars)   // characters counted in Unicode scalars
    }
    print(try WordTagging.evaluate(model: model, data: "names.bio").report.accuracy)
#sourceLocation()
}

/// docs/API.md:281, Train on a table — `MLBoostedTreeClassifier`, LightGBM
func example8() throws {
#sourceLocation(file: "docs/API.md", line: 281)
    var parameters = TabularParameters()
    parameters.target = "diabetes"                // a column of words: a classifier (numbers: a regressor)
    let result = try TabularTrainer(data: "diabetes.csv", test: "diabetes-test.csv", parameters: parameters).train()
    print(result.evaluation?.classification?.accuracy ?? .nan, result.rounds)
    try result.write(to: "Diabetes.bin")

    let model = try TabularModel(contentsOf: "Diabetes.bin")
    let p = try model.predict(rows: [["glucose": "148", "mass": "33.6", "age": "50", "pedigree": "0.627"]])
    print(p[0].label ?? "", p[0].probabilities)     // columns the row lacks are missing values
#sourceLocation()
}

/// docs/API.md:336, Identify the language — `NLLanguageRecognizer`
func example9() throws {
#sourceLocation(file: "docs/API.md", line: 336)
    var recognizer = try LanguageRecognizer()
    print("language:", try recognizer.dominantLanguage(for: "Diese Bibliothek liest und schreibt Dateien im JSON-Format.") ?? "und")
    print(try recognizer.languageHypotheses(for: "Biblioteca para ler e escrever ficheiros", withMaximum: 3))
    recognizer.languageConstraints = ["es", "it"]          // only these, renormalised
    print(try recognizer.dominantLanguage(for: "Biblioteca para ler e escrever ficheiros") ?? "und")
    for hypotheses in try recognizer.ranked(["Ahoj, jak se máš?", "12345"], maximum: 2) {   // many texts at once
        print(hypotheses.map { "\($0.language) \($0.probability)" })
    }
#sourceLocation()
}

/// docs/API.md:370, Tag words — `NLTagger`
func example10() throws {
#sourceLocation(file: "docs/API.md", line: 370)
    var tagger = try TextTagger(tagSchemes: [.lexicalClass, .nameType, .language])
    tagger.string = "Barack Obama met Angela Merkel in Berlin on Monday to talk about the weather. Das ist ein Haus."
    let all = tagger.string.startIndex..<tagger.string.endIndex
    tagger.enumerateTags(in: all, unit: .word, scheme: .nameType, options: [.omitWhitespace, .joinNames]) { tag, range in
        if tag != "OtherWord" && tag != "Punctuation" { print(tagger.string[range], tag ?? "-") }   // Barack Obama PersonalName …
        return true
    }
    for (tag, range) in tagger.tags(in: all, unit: .word, scheme: .lexicalClass, options: .omitWhitespace).prefix(4) {
        print(tagger.string[range], tag ?? "-")                                     // Barack Noun, Obama Noun, met Verb, …
    }
    for (language, sentence) in tagger.tags(in: all, unit: .sentence, scheme: .language) {
        print(language ?? "und", tagger.string[sentence])                          // en …, de Das ist ein Haus.
    }
#sourceLocation()
}

/// docs/API.md:404, Classify many images — `MLArrayBatchProvider`
func example11() throws {
#sourceLocation(file: "docs/API.md", line: 404)
    let classifier = try ImageClassifier(contentsOf: URL(fileURLWithPath: "Clothes.bin"))
    let urls = try FileManager.default.contentsOfDirectory(at: URL(fileURLWithPath: "Clothes/bag"),
                                                           includingPropertiesForKeys: nil)
    let results = classifier.classify(batch: urls.map { .file($0) }, options: ClassificationOptions(maximumCount: 1))
    for (url, result) in zip(urls, results) {
        switch result {
        case .success(let classes): print(url.lastPathComponent, classes.first?.identifier ?? "none")
        case .failure(let error): print(url.lastPathComponent, "could not be classified:", error)
        }
    }
#sourceLocation()
}

/// docs/API.md:424, Serve models over HTTP — `ModelServer`
func example12() throws {
#sourceLocation(file: "docs/API.md", line: 424)
    var parameters = ModelServerParameters()
    parameters.port = 0                         // any free port; 8080 by default
    parameters.maxWaitMilliseconds = 2          // how long a batch waits for more requests
    let server = try ModelServer(models: ["Clothes.bin", "reviews=Reviews.bin"], parameters: parameters)
    print(server.models.map { "\($0.name) (\($0.task))" }, "on port", server.port > 0)
    // POST an image to http://127.0.0.1:<port>/v1/models/Clothes/predict, a {"text": …} to …/reviews/predict
    let unanswered = server.stop(drainSeconds: 5)      // stops accepting, answers what it received
    print("unanswered:", unanswered)
#sourceLocation()
}

/// docs/API.md:456, Compress weights — `linear_quantize_weights`, `palettize_weights`
func example13() throws {
#sourceLocation(file: "docs/API.md", line: 456)
    let linear = QuantizationParameters(bits: 8, mode: .linear)
    let int8 = try QuantizationPipeline(modelPath: "Clothes.bin", parameters: linear).run()
    if let gate = int8.report.gate {
        let agreement = gate.agreement.map { ", agreement \($0)" } ?? ""   // classifiers only
        print("accuracy \(gate.floatAccuracy) → \(gate.quantizedAccuracy)\(agreement)")
    }
    try int8.write(to: "Clothes-int8.bin")

    var parameters = QuantizationParameters(bits: 4, mode: .palette)
    parameters.maxDrop = 1.5                    // percentage points
    let pal4 = try QuantizationPipeline(modelPath: "Clothes.bin", parameters: parameters).run()
    print(pal4.report.fileBytesAfter, "bytes, down from", pal4.report.fileBytesBefore)
    try pal4.write()                            // Clothes.pal4.bin
#sourceLocation()
}

/// docs/API.md:492, Convert models — `ct.convert`
func example14() throws {
#sourceLocation(file: "docs/API.md", line: 492)
    // In. `featureTensor` names the layer that `ImageClassifierParameters.extractor` would train on.
    let labels = try String(contentsOfFile: "labels.txt", encoding: .utf8).split(separator: "\n").map(String.init)
    let options = ImportOptions(image: .efficientNetLite, labels: labels, featureTensor: "features")
    let net = try ModelImport.importModel(path: "net.onnx", options: options)
    try ModelFile.write(net, to: "net.bin", inputs: ["net.onnx"])
    let keras = try ModelImport.importModel(path: "net.h5")
    print(ModelSummary(model: keras, layout: nil).text(path: "net.h5"))

    // Out.
    let model = try Model(contentsOf: URL(fileURLWithPath: "Clothes.bin"))
    for format in ModelExport.Format.allCases {
        let exported = try ModelExport.export(model, name: "Clothes", format: format)
        try AtomicFile.write(exported.bytes, to: "Clothes" + format.fileExtension)
        for note in exported.notes { print("note:", note) }
    }
#sourceLocation()
}

let examples: [(String, @Sendable () async throws -> Void)] = [
    ("docs/API.md:71 Load and inspect a model — `MLModel`", example1),
    ("docs/API.md:94 Classify an image — `VNClassifyImageRequest`", example2),
    ("docs/API.md:118 Classify with your own model — `VNCoreMLRequest`", example3),
    ("docs/API.md:145 Classify text — `NLModel`", example4),
    ("docs/API.md:174 Train an image classifier — `MLImageClassifier`", example5),
    ("docs/API.md:212 Train a text classifier — `MLTextClassifier`", example6),
    ("docs/API.md:243 Tag words — `MLWordTagger`, `NLTagger`", example7),
    ("docs/API.md:281 Train on a table — `MLBoostedTreeClassifier`, LightGBM", example8),
    ("docs/API.md:336 Identify the language — `NLLanguageRecognizer`", example9),
    ("docs/API.md:370 Tag words — `NLTagger`", example10),
    ("docs/API.md:404 Classify many images — `MLArrayBatchProvider`", example11),
    ("docs/API.md:424 Serve models over HTTP — `ModelServer`", example12),
    ("docs/API.md:456 Compress weights — `linear_quantize_weights`, `palettize_weights`", example13),
    ("docs/API.md:492 Convert models — `ct.convert`", example14),
]
var failures = 0
for (location, example) in examples {
    let started = Date()
    do {
        try await example()
        print("ok      \(location) (\(Int(Date().timeIntervalSince(started) * 1000)) ms)")
    } catch {
        failures += 1
        print("FAILED  \(location): \(error)")
    }
}
exit(failures == 0 ? 0 : 1)
