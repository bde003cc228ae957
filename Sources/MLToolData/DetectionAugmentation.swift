import Foundation
import MLToolCore

/// Seeded augmentation of an annotated photo for detector training: geometric changes move the boxes with the
/// pixels. The same photo, boxes and seed always give the same result.
public enum DetectionAugmentation {
    /// A variant of `image` with its boxes: a random zoom (keeping 60–100 % of each side, at a random place; boxes
    /// cut to the kept part, dropped when less than 40 % of one remains), a left–right mirror half of the time, and
    /// a brightness change of 2^u, u uniform in ±0.4, and saturation scaled by 0.6–1.4.
    public static func apply(_ image: RGBImage, _ objects: [ObjectAnnotation], seed: UInt64) -> (RGBImage, [ObjectAnnotation]) {
        var rng = SplitMix64(seed: seed ^ 0x6465_7465_6374)  // "detect"
        func u() -> Double { Double(rng.nextUnit()) }
        var img = image
        var boxes = objects
        // Zoom: a crop of random size and place.
        let keep = 0.6 + 0.4 * u(), aspect = 0.85 + 0.3 * u()
        let cw = max(8, min(image.width, Int((Double(image.width) * keep * aspect.squareRoot()).rounded())))
        let ch = max(8, min(image.height, Int((Double(image.height) * keep / aspect.squareRoot()).rounded())))
        let x0 = Int((Double(image.width - cw) * u()).rounded()), y0 = Int((Double(image.height - ch) * u()).rounded())
        if cw < image.width || ch < image.height {
            img = crop(image, x: x0, y: y0, width: cw, height: ch)
            boxes = objects.compactMap { o in
                let moved = BoundingBox(x: o.box.x - Double(x0), y: o.box.y - Double(y0), width: o.box.width, height: o.box.height)
                let c = moved.clipped(width: Double(cw), height: Double(ch))
                guard o.box.area > 0, c.area >= 0.4 * o.box.area, c.width >= 2, c.height >= 2 else { return nil }
                return ObjectAnnotation(label: o.label, box: c)
            }
        }
        if u() < 0.5 {
            img = img.oriented(2)
            let w = Double(img.width)
            boxes = boxes.map { ObjectAnnotation(label: $0.label, box: BoundingBox(x: w - $0.box.maxX, y: $0.box.y, width: $0.box.width, height: $0.box.height)) }
        }
        let gain = Float(pow(2, (u() - 0.5) * 0.8)), saturation = Float(0.6 + 0.8 * u())
        img.pixels.withUnsafeMutableBufferPointer { p in
            var i = 0
            while i + 2 < p.count {
                let r = Float(p[i]), g = Float(p[i + 1]), b = Float(p[i + 2])
                let y = 0.299 * r + 0.587 * g + 0.114 * b
                for (k, v) in [r, g, b].enumerated() {
                    let out = (y + (v - y) * saturation) * gain
                    p[i + k] = UInt8(max(0, min(255, out.rounded())))
                }
                i += 3
            }
        }
        return (img, boxes)
    }

    /// The `width` × `height` part of `image` at (x, y) (inside the image).
    public static func crop(_ image: RGBImage, x: Int, y: Int, width: Int, height: Int) -> RGBImage {
        var out = [UInt8](repeating: 0, count: width * height * 3)
        image.pixels.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                for row in 0..<height {
                    let s = ((y + row) * image.width + x) * 3
                    for k in 0..<(width * 3) { dst[row * width * 3 + k] = src[s + k] }
                }
            }
        }
        return RGBImage(width: width, height: height, pixels: out)
    }
}
