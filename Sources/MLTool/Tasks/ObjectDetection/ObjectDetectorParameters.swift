import Foundation
import MLToolCore
import MLToolData

/// The settings of an object detector training run (Create ML's `MLObjectDetector.ModelParameters`); these
/// defaults are the only ones — the CLI's help prints them from here.
public struct ObjectDetectorParameters: Sendable, Equatable {
    /// A feature map of the extractor that a head reads, and its stride (input pixels per cell).
    public struct FeatureMap: Sendable, Equatable {
        public var tensor: String
        public var stride: Int
        public init(tensor: String, stride: Int) { self.tensor = tensor; self.stride = stride }
    }

    /// The feature extractor (nil: the default EfficientNet-Lite0, found as for image classifiers).
    public var extractor: String?
    /// The square input size the photo is letterboxed to (a multiple of the largest stride).
    public var inputSize = 320
    /// EfficientNet-Lite0's stride-16 block output (112 channels) and its last 1×1 conv (1280 channels, stride 32).
    public var featureMaps = [FeatureMap(tensor: "_blocks.10.add", stride: 16), FeatureMap(tensor: "_bn1.relu6", stride: 32)]
    /// Channels of each head's 1×1 reduction of its feature map, and of its 3×3 context layer.
    public var reduced = 64
    public var hidden = 128
    public var epochs = 20
    /// Photos per step.
    public var batchSize = 8
    public var learningRate: Float = 1e-3
    public var weightDecay: Float = 1e-4
    /// Augmented variants of each training photo besides the photo itself (zoom, mirror, brightness, saturation);
    /// 0 turns augmentation off.
    public var augmentedCopies = 4
    /// Without test data: the share of the photos held out for `mltool eval` (seeded, recorded in the model).
    public var holdoutFraction = 0.2
    /// The validation share of the training photos, for the mAP printed per epoch.
    public var validation = ValidationRule.auto
    /// A box is learnt by the finer map when its longer side (input pixels) is below this.
    public var scaleSplit = 96.0
    /// Cells within this many cells of a box's centre (and inside the box) learn it.
    public var centerRadius = 2.5
    /// The NMS settings recorded in the model (what `predict` uses unless told otherwise). The class scores are
    /// trained to predict the box's IoU with the object, so 0.5 keeps the boxes that probably match.
    public var nms = NMSSettings(iouThreshold: 0.45, confidenceThreshold: 0.5, perClass: true, maxDetections: 100)
    /// The confidence above which detections count for mAP (low-scoring ones matter for the curve); the
    /// evaluator's default (`DetectorEvaluator.Parameters.minConfidence`), so training and `eval` agree.
    public var evaluationThreshold: Float = DetectorEvaluator.Parameters().minConfidence
    public var seed: UInt64 = 42
    /// Engine threads for feature extraction; 0 uses every core.
    public var threads = 0
    /// The feature cache folder; nil: `FeatureCache.defaultDirectory()`.
    public var cacheDirectory: String?
    /// The largest photo decoded, in pixels.
    public var maxPixels = ImageDecoder.defaultMaxPixels
    /// Stop at the first photo that cannot be decoded; by default such a photo is skipped and named (with its
    /// boxes), as image classification skips an image.
    public var strict = false
    /// The model's name.
    public var name = "detector"

    public init() {}

    func validate() throws {
        func bad(_ name: String, _ reason: String) -> PipelineError { .invalidParameter(name: name, reason: reason) }
        guard !featureMaps.isEmpty, let largest = featureMaps.map(\.stride).max(), featureMaps.allSatisfy({ $0.stride >= 1 }) else {
            throw bad("featureMaps", "at least one, each with a stride ≥ 1")
        }
        guard inputSize >= largest, inputSize % largest == 0, inputSize <= 2048 else {
            throw bad("inputSize", "\(inputSize): expected a multiple of \(largest) up to 2048")
        }
        guard (1...4096).contains(hidden) else { throw bad("hidden", "\(hidden): expected 1…4096") }
        guard (1...4096).contains(reduced) else { throw bad("reduced", "\(reduced): expected 1…4096") }
        guard (0...10_000).contains(epochs) else { throw bad("epochs", "\(epochs): expected 0…10000") }
        guard batchSize >= 1 else { throw bad("batchSize", "\(batchSize): expected ≥ 1") }
        guard learningRate > 0, learningRate.isFinite else { throw bad("learningRate", "\(learningRate): expected > 0") }
        guard weightDecay >= 0, weightDecay.isFinite else { throw bad("weightDecay", "\(weightDecay): expected ≥ 0") }
        guard (0...64).contains(augmentedCopies) else { throw bad("augmentedCopies", "\(augmentedCopies): expected 0…64") }
        guard holdoutFraction >= 0, holdoutFraction < 1 else { throw bad("holdoutFraction", "\(holdoutFraction): expected [0, 1)") }
        guard centerRadius > 0, scaleSplit > 0 else { throw bad("centerRadius", "expected > 0") }
        guard (0...1).contains(nms.iouThreshold), (0...1).contains(nms.confidenceThreshold), nms.maxDetections >= 1 else {
            throw bad("nms", "thresholds in [0, 1] and at least one detection")
        }
    }
}
