/// An axis-aligned box: its top-left corner and size, in pixels of an image whose origin is the top-left corner
/// (y grows downwards), unless a property says otherwise.
public struct BoundingBox: Codable, Equatable, Hashable, Sendable {
    public var x: Double
    public var y: Double
    public var width: Double
    public var height: Double

    public init(x: Double, y: Double, width: Double, height: Double) {
        self.x = x; self.y = y; self.width = width; self.height = height
    }

    /// The box with corners (x1, y1) and (x2, y2).
    public init(x1: Double, y1: Double, x2: Double, y2: Double) {
        self.init(x: x1, y: y1, width: x2 - x1, height: y2 - y1)
    }

    public var maxX: Double { x + width }
    public var maxY: Double { y + height }
    public var area: Double { Swift.max(width, 0) * Swift.max(height, 0) }

    /// Intersection over union; 0 when the union is empty.
    public func iou(_ o: BoundingBox) -> Double {
        let w = Swift.min(maxX, o.maxX) - Swift.max(x, o.x), h = Swift.min(maxY, o.maxY) - Swift.max(y, o.y)
        guard w > 0, h > 0 else { return 0 }
        let inter = w * h, union = area + o.area - inter
        return union > 0 ? inter / union : 0
    }

    /// The part inside a `width` × `height` image.
    public func clipped(width w: Double, height h: Double) -> BoundingBox {
        let x1 = Swift.min(Swift.max(x, 0), w), y1 = Swift.min(Swift.max(y, 0), h)
        let x2 = Swift.min(Swift.max(maxX, 0), w), y2 = Swift.min(Swift.max(maxY, 0), h)
        return BoundingBox(x1: x1, y1: y1, x2: x2, y2: y2)
    }

    /// Vision's normalised rectangle for this pixel box in a `width` × `height` image: fractions of the image size
    /// with the origin at the bottom-left corner (y grows upwards), as `VNRecognizedObjectObservation.boundingBox`.
    public func normalized(imageWidth w: Int, imageHeight h: Int) -> BoundingBox {
        let fw = Double(Swift.max(w, 1)), fh = Double(Swift.max(h, 1))
        return BoundingBox(x: x / fw, y: 1 - maxY / fh, width: width / fw, height: height / fh)
    }
}

/// One detected object.
public struct Detection: Codable, Equatable, Sendable {
    public var label: String
    /// The class's index in the model's labels.
    public var classIndex: Int
    public var confidence: Double
    /// In pixels of the photo, origin top-left.
    public var box: BoundingBox

    public init(label: String, classIndex: Int, confidence: Double, box: BoundingBox) {
        self.label = label; self.classIndex = classIndex; self.confidence = confidence; self.box = box
    }
}

/// One labelled box of an annotation (ground truth).
public struct ObjectAnnotation: Codable, Equatable, Hashable, Sendable {
    public var label: String
    /// Pixels of the photo, origin top-left.
    public var box: BoundingBox
    public init(label: String, box: BoundingBox) { self.label = label; self.box = box }
}
