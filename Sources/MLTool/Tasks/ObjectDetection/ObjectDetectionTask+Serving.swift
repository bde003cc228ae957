import Foundation
import MLToolCore
import MLToolData
import MLToolDetect

extension ObjectDetectionTask {
    public static func servingPredictor(model: Model, path: String) throws -> any ServingPredictor {
        ObjectDetectionServing(detector: try Detector(model: model), path: path)
    }
    public static func previewInput(model: Model) -> PreviewInput? { PreviewInput(takes: .images) }
}

/// A detector behind `mltool serve`: a batch decodes on every core and runs as one `Detector.detect` call; each
/// answer is `predict --json`'s object (boxes in pixels and Vision's normalised form).
struct ObjectDetectionServing: ServingPredictor {
    let detector: Detector
    let path: String

    func predict(_ inputs: [ServingInput]) -> [Result<String, Error>] {
        let decoded = Slots<Result<(String, RGBImage), Error>>(count: inputs.count)
        DispatchQueue.concurrentPerform(iterations: inputs.count) { i in
            decoded.set(i, Result {
                guard case .image(let bytes, let name) = inputs[i] else {
                    throw PipelineError.badInput(file: path, reason: "a detector takes images, not texts")
                }
                return (name, try ImageDecoder.decode(bytes: bytes, name: name))
            })
        }
        let images = decoded.values.compactMap { try? $0.get() }
        let found: [[DetectedObject]]
        do { found = try detector.detect(images.map(\.1)) } catch { return inputs.map { _ in .failure(error) } }
        var next = 0
        return decoded.values.map { result in
            result.flatMap { name, image in
                defer { next += 1 }
                return Result {
                    try TaskOutput.json(ObjectDetection.PhotoResult(path: name, width: image.width, height: image.height, objects: found[next]))
                }
            }
        }
    }
}
