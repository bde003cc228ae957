import CCoreMLProto
import MLToolCore

/// The settings of a Core ML NonMaximumSuppression model, the last stage of a detector pipeline (network →
/// NMS, as Turi Create, Create ML and coremltools write them). Parsed so that importing detectors (issue 17) can
/// connect them to mltool's decoder; today such pipelines are refused with these values in the error.
public struct CoreMLDetectorPipeline: Equatable, Sendable {
    /// Names of the stages, in order (the pipeline's `names`, or the model types when it has none).
    public var stages: [String]
    public var iouThreshold: Double
    public var confidenceThreshold: Double
    /// Whether suppression runs per class (`pickTop.perClass`).
    public var perClass: Bool
    public var labels: [String]
    /// Feature names: the network's confidence and coordinates outputs the NMS model reads, and its outputs.
    public var confidenceInput: String
    public var coordinatesInput: String
    public var confidenceOutput: String
    public var coordinatesOutput: String
    /// Optional inputs that override the thresholds at prediction time (empty when absent).
    public var iouThresholdInput: String
    public var confidenceThresholdInput: String

    init(_ n: CoreML__Specification__NonMaximumSuppression, stages: [String]) {
        self.stages = stages
        iouThreshold = n.iouthreshold
        confidenceThreshold = n.confidencethreshold
        perClass = n.picktop?.pointee.perclass != 0 && n.picktop != nil
        if let v = n.stringclasslabels?.pointee {
            labels = (0..<v.n_vector).map { cString(v.vector[$0]) }
        } else if let v = n.int64classlabels?.pointee {
            labels = (0..<v.n_vector).map { String(v.vector[$0]) }
        } else {
            labels = []
        }
        confidenceInput = cString(n.confidenceinputfeaturename)
        coordinatesInput = cString(n.coordinatesinputfeaturename)
        confidenceOutput = cString(n.confidenceoutputfeaturename)
        coordinatesOutput = cString(n.coordinatesoutputfeaturename)
        iouThresholdInput = cString(n.iouthresholdinputfeaturename)
        confidenceThresholdInput = cString(n.confidencethresholdinputfeaturename)
    }

    /// One line for the refusal: what was found.
    public var summary: String {
        "stages \(stages.joined(separator: " → ")); NMS iou \(iouThreshold), confidence \(confidenceThreshold)"
            + (perClass ? ", per class" : "") + ", \(labels.count) labels"
            + ", reads '\(confidenceInput)' / '\(coordinatesInput)', writes '\(confidenceOutput)' / '\(coordinatesOutput)'"
    }
}
