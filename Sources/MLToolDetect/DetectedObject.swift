import MLToolCore

/// One object found in a photo: what Vision's `VNRecognizedObjectObservation` carries, with the box both in pixels
/// and in Vision's normalised coordinates. JSON keys are stable (they are part of `--json` output).
public struct DetectedObject: Codable, Equatable, Sendable {
    public var label: String
    /// The class's index in the model's labels.
    public var classIndex: Int
    public var confidence: Double
    /// In pixels of the photo, origin top-left (y down).
    public var box: BoundingBox
    /// Fractions of the photo's width and height, origin bottom-left (y up), as Vision's `boundingBox`.
    public var normalizedBox: BoundingBox

    public init(label: String, classIndex: Int, confidence: Double, box: BoundingBox, imageWidth: Int, imageHeight: Int) {
        self.label = label; self.classIndex = classIndex; self.confidence = confidence; self.box = box
        normalizedBox = box.normalized(imageWidth: imageWidth, imageHeight: imageHeight)
    }

    /// As the evaluation's value type.
    public var detection: Detection { Detection(label: label, classIndex: classIndex, confidence: confidence, box: box) }
}

/// A decoded box before non-maximum suppression: corners in input pixels, its best class and score, and its
/// position in decoding order (which breaks score ties).
public struct DetectionCandidate: Equatable, Sendable {
    public var x1: Float
    public var y1: Float
    public var x2: Float
    public var y2: Float
    public var classIndex: Int
    public var score: Float
    public var index: Int

    public init(x1: Float, y1: Float, x2: Float, y2: Float, classIndex: Int, score: Float, index: Int) {
        self.x1 = x1; self.y1 = y1; self.x2 = x2; self.y2 = y2; self.classIndex = classIndex; self.score = score
        self.index = index
    }

    public var box: BoundingBox { BoundingBox(x1: Double(x1), y1: Double(y1), x2: Double(x2), y2: Double(y2)) }
}
