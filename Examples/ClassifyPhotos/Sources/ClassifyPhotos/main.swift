// Classifies photos with an ImageNet model, then trains a classifier of its own and uses it.
// Usage: ClassifyPhotos PHOTOS LABELED_FOLDERS [MODEL]: PHOTOS is a folder of JPEG/PNG files, LABELED_FOLDERS has a
// subfolder of images per label, MODEL defaults to efficientnet-lite0.bin (`make models`) where mltool finds it.
import Foundation
import MLTool

/// Prints `file` and its most probable classes as one line of JSON.
func show(_ file: String, _ classes: [Classification]) throws {
    struct Class: Encodable { let identifier: String, confidence: Float }
    struct Line: Encodable { let file: String, top: [Class] }
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    let line = Line(file: file, top: classes.map { Class(identifier: $0.identifier, confidence: $0.confidence) })
    print(String(decoding: try encoder.encode(line), as: UTF8.self))
}

func run(_ arguments: [String]) throws {
    // 1. The five most probable ImageNet classes of each photo (Vision's VNClassifyImageRequest), run in batches.
    let modelPath = arguments.count == 4 ? arguments[3] : FeatureExtractor.candidates(explicit: nil)
        .first { FileManager.default.fileExists(atPath: $0) } ?? "models/" + FeatureExtractor.defaultFileName
    let imagenet = try ImageClassifier(contentsOf: URL(fileURLWithPath: modelPath))
    let photos = try DirectoryWalk.expand([arguments[1]])
    let top5 = imagenet.classify(batch: photos.map { .path($0) }, options: ClassificationOptions(maximumCount: 5))
    for (photo, classes) in zip(photos, top5) { try show(photo, classes.get()) }

    // 2. A classifier of our own (Create ML's MLImageClassifier, default parameters), tried on two images per label.
    let result = try ImageClassifierTrainer(data: .labeledDirectories(at: URL(fileURLWithPath: arguments[2]))).train()
    let labels = result.model.metadata.labels
    print("trained \(labels): holdout accuracy \(result.metrics["holdout.accuracy"] ?? .nan)")
    let classifier = try ImageClassifier(model: result.model)
    let samples = try labels.flatMap { try DirectoryWalk.expand([arguments[2] + "/" + $0]).prefix(2) }
    let predictions = classifier.classify(batch: samples.map { .path($0) })
    for (image, classes) in zip(samples, predictions) { try show(image, classes.get()) }
}

let arguments = CommandLine.arguments
guard (3...4).contains(arguments.count) else { print("usage: ClassifyPhotos PHOTOS LABELED_FOLDERS [MODEL]"); exit(64) }
do { try run(arguments) } catch { FileHandle.standardError.write(Data("ClassifyPhotos: \(error)\n".utf8)); exit(1) }
