import Foundation
import MLToolCore

/// Turns a decoded image into a model's input: one NHWC image as `[Float]` (height × width × channels).
///
/// Steps, matching a PIL + torchvision pipeline: convert to gray first if the model wants it (PIL's `convert("L")`
/// weights); resize with `ImageResampler` (PIL BILINEAR, antialiased when shrinking), either to exactly
/// height × width or, for "shorter", the shorter side to `resizeTo` (default max(height, width)) and the other to
/// `int(resizeTo · long / short)` as torchvision does; centre crop (torchvision's `round((size − crop) / 2)`
/// offsets); then `(pixel · scale + bias[c] − mean[c]) / std[c]` per output channel (for "bgr" output channel 0 is
/// blue and takes bias[0], mean[0], std[0]).
public struct ImagePreprocessor: Sendable {
    public let config: ImagePreprocessing
    /// 1 for gray, else 3.
    public let channels: Int
    /// Floats per image: height × width × channels.
    public let elementCount: Int
    private let lut: [Float]  // channels × 256 pixel → value

    /// Validates `config`; throws `DataError.invalidPreprocessing` naming what is wrong.
    public init(_ config: ImagePreprocessing) throws {
        func bad(_ what: String) -> DataError { .invalidPreprocessing(what: what) }
        guard config.height > 0, config.width > 0, config.height <= 1 << 15, config.width <= 1 << 15 else {
            throw bad("input size \(config.height)×\(config.width)")
        }
        guard ["rgb", "bgr", "gray"].contains(config.colorOrder) else {
            throw bad("colour order '\(config.colorOrder)', expected rgb, bgr or gray")
        }
        guard ["shorter", "exact", "scaleFill", "letterbox"].contains(config.resize) else {
            throw bad("resize '\(config.resize)', expected shorter, exact, scaleFill or letterbox")
        }
        guard ["center", "none"].contains(config.crop) else { throw bad("crop '\(config.crop)', expected center or none") }
        if config.resize == "letterbox" {
            guard config.crop == "none" else { throw bad("crop '\(config.crop)' with resize letterbox, expected none") }
            if let v = config.padValue, !(v >= 0 && v <= 255) { throw bad("padValue \(v), expected 0…255") }
        }
        if let r = config.resizeTo, r <= 0 || r > 1 << 15 { throw bad("resizeTo \(r)") }
        let channels = config.colorOrder == "gray" ? 1 : 3
        for (name, values) in [("bias", config.bias), ("mean", config.mean), ("std", config.std)]
            where values.count < channels {
            throw bad("\(name) has \(values.count) values, expected \(channels)")
        }
        guard config.std.prefix(channels).allSatisfy({ $0 != 0 && $0.isFinite }) else {
            throw bad("std \(config.std) has a zero")
        }
        self.config = config
        self.channels = channels
        self.elementCount = config.height * config.width * channels
        var lut = [Float](repeating: 0, count: channels * 256)
        for c in 0..<channels {
            for p in 0..<256 {
                lut[c * 256 + p] = (Float(p) * config.scale + config.bias[c] - config.mean[c]) / config.std[c]
            }
        }
        self.lut = lut
    }

    /// The size an image of `width` × `height` is resized to before cropping (letterbox: before padding).
    public func resizedSize(width: Int, height: Int) -> (width: Int, height: Int) {
        if config.resize == "exact" || config.resize == "scaleFill" { return (config.width, config.height) }
        if config.resize == "letterbox" {
            let r = letterboxRatio(width: width, height: height)
            // Python's round (halves to even), as Ultralytics' letterbox.
            return (max(1, Int((Double(width) * r).rounded(.toNearestOrEven))),
                    max(1, Int((Double(height) * r).rounded(.toNearestOrEven))))
        }
        let target = config.resizeTo ?? max(config.height, config.width)
        if height <= width {
            return (max(1, Int((Double(target) * Double(width) / Double(height)).rounded())), target)
        }
        return (target, max(1, Int((Double(target) * Double(height) / Double(width)).rounded())))
    }

    /// The model input for `image`.
    public func process(_ image: RGBImage) throws -> [Float] {
        var out = [Float](repeating: 0, count: elementCount)
        try out.withUnsafeMutableBufferPointer { try process(image, into: $0) }
        return out
    }

    /// Writes the model input for `image` into the first `elementCount` floats of `buffer`.
    public func process(_ image: RGBImage, into buffer: UnsafeMutableBufferPointer<Float>) throws {
        guard buffer.count >= elementCount else {
            throw DataError.invalidPreprocessing(what: "output buffer holds \(buffer.count) floats, need \(elementCount)")
        }
        let pixels = channels == 1 ? Self.gray(image.pixels) : image.pixels
        let (rw, rh) = resizedSize(width: image.width, height: image.height)
        guard rw <= 1 << 16, rh <= 1 << 16 else {  // a 1 × 100000 strip would otherwise resize to gigapixels
            throw DataError.invalidPreprocessing(
                what: "a \(image.width)×\(image.height) image is too elongated (it would resize to \(rw)×\(rh))")
        }
        let H = config.height, W = config.width, C = channels
        if config.resize == "letterbox" {
            let resized = rw == image.width && rh == image.height ? pixels :
                ImageResampler.resize(pixels, width: image.width, height: image.height, channels: channels,
                                      toWidth: rw, toHeight: rh)
            return try letterbox(resized, rw: rw, rh: rh, into: buffer)
        }
        guard rw >= W, rh >= H, config.crop == "center" || (rw == W && rh == H) else {
            throw DataError.invalidPreprocessing(
                what: "resized image \(rw)×\(rh) cannot give a \(W)×\(H) input with crop '\(config.crop)'")
        }
        // Only the centre crop of the resized image is computed (the same pixels as resizing, then cropping).
        let window = ImageResampler.Window(x: (rw - W) / 2, y: (rh - H) / 2, width: W, height: H)
        let cropped = rw == image.width && rh == image.height && rw == W && rh == H ? pixels :
            ImageResampler.resize(pixels, width: image.width, height: image.height, channels: C,
                                  toWidth: rw, toHeight: rh, window: window)
        cropped.withUnsafeBufferPointer { src in
            guard let src = src.baseAddress, let out = buffer.baseAddress else { return }
            convert(src, into: out, pixels: H &* W)
        }
    }

    /// `pixels` pixels of `src` (`channels` bytes each) through the lookup table into `out` (`channels` floats each),
    /// in the model's channel order. The caller holds both ranges.
    private func convert(_ src: UnsafePointer<UInt8>, into out: UnsafeMutablePointer<Float>, pixels count: Int) {
        let C = channels
        lut.withUnsafeBufferPointer { lut in
            guard let lut = lut.baseAddress else { return }
            switch (C, config.colorOrder == "bgr") {
            case (3, false):
                for i in 0..<count {
                    let s = src + i &* 3, d = out + i &* 3
                    d[0] = lut[Int(s[0])]; d[1] = lut[256 &+ Int(s[1])]; d[2] = lut[512 &+ Int(s[2])]
                }
            case (3, true):
                for i in 0..<count {
                    let s = src + i &* 3, d = out + i &* 3
                    d[0] = lut[Int(s[2])]; d[1] = lut[256 &+ Int(s[1])]; d[2] = lut[512 &+ Int(s[0])]
                }
            case (_, let bgr):
                for i in 0..<count {
                    for c in 0..<C { out[i &* C &+ c] = lut[c &* 256 &+ Int(src[i &* C &+ (bgr ? 2 &- c : c)])] }
                }
            }
        }
    }

    /// letterbox: r = min(height / h, width / w).
    func letterboxRatio(width: Int, height: Int) -> Double {
        min(Double(config.height) / Double(max(height, 1)), Double(config.width) / Double(max(width, 1)))
    }

    /// The resized `pixels` (rw × rh) centred on the canvas, the rest `padValue`: each canvas value written once.
    private func letterbox(_ pixels: [UInt8], rw: Int, rh: Int, into buffer: UnsafeMutableBufferPointer<Float>) throws {
        let H = config.height, W = config.width, C = channels
        let w = min(rw, W), h = min(rh, H), left = max(0, (W - rw) / 2), top = max(0, (H - rh) / 2)
        let pad = config.padValue ?? 0
        let value = (0..<C).map { c in (pad * config.scale + config.bias[c] - config.mean[c]) / config.std[c] }
        guard pixels.count == rw * rh * C else {  // an RGBImage whose pixels were replaced by another count
            throw DataError.invalidPreprocessing(what: "a \(rw)×\(rh) image holds \(pixels.count) bytes, not \(rw * rh * C)")
        }
        guard let out = buffer.baseAddress, buffer.count >= elementCount else { return }
        value.withUnsafeBufferPointer { value in
            /// `count` pad pixels from canvas pixel `start`.
            func fill(_ start: Int, _ count: Int) {
                for i in start..<(start &+ count) { for c in 0..<C { out[i &* C &+ c] = value[c] } }
            }
            fill(0, top &* W)
            pixels.withUnsafeBufferPointer { src in
                guard let src = src.baseAddress else { return }
                for y in 0..<h {
                    let row = (y &+ top) &* W
                    fill(row, left)
                    convert(src + y &* rw &* C, into: out + (row &+ left) &* C, pixels: w)
                    fill(row &+ left &+ w, W &- left &- w)
                }
            }
            fill((top &+ h) &* W, (H &- top &- h) &* W)
        }
    }

    /// How a `width` × `height` photo maps onto the model input: input = photo · scale + offset per axis.
    /// Letterbox uses one scale r and the padding (Ultralytics' `scale_boxes`); "shorter" + centre crop the resize
    /// factors and minus the crop offsets; exact the two resize factors.
    public func geometry(width: Int, height: Int) -> ImageGeometry {
        let (rw, rh) = resizedSize(width: width, height: height)
        let w = Double(max(width, 1)), h = Double(max(height, 1))
        switch config.resize {
        case "letterbox":
            let r = letterboxRatio(width: width, height: height)
            let padX = ((Double(config.width) - Double(width) * r) / 2 - 0.1).rounded(.toNearestOrEven)
            let padY = ((Double(config.height) - Double(height) * r) / 2 - 0.1).rounded(.toNearestOrEven)
            return ImageGeometry(scaleX: r, scaleY: r, offsetX: padX, offsetY: padY, width: width, height: height)
        case "shorter":
            let left = Double((rw - config.width) / 2), top = Double((rh - config.height) / 2)
            return ImageGeometry(scaleX: Double(rw) / w, scaleY: Double(rh) / h, offsetX: config.crop == "center" ? -left : 0,
                                 offsetY: config.crop == "center" ? -top : 0, width: width, height: height)
        default:
            return ImageGeometry(scaleX: Double(rw) / w, scaleY: Double(rh) / h, offsetX: 0, offsetY: 0, width: width, height: height)
        }
    }

    /// Writes `images` one after another (N × H × W × C) into `buffer`, on every core (each image its own slice);
    /// the first image's error, in order, is thrown.
    public func processBatch(_ images: [RGBImage], into buffer: UnsafeMutableBufferPointer<Float>) throws {
        let needed = try Checked.mul(images.count, elementCount, what: "batch size")
        guard buffer.count >= needed, let base = buffer.baseAddress else {
            if images.isEmpty { return }
            throw DataError.invalidPreprocessing(what: "output buffer holds \(buffer.count) floats, need \(needed)")
        }
        let out = SharedPointer(p: base), errors = Slots<Error>(count: images.count), n = elementCount
        DispatchQueue.concurrentPerform(iterations: images.count) { i in
            do { try process(images[i], into: UnsafeMutableBufferPointer(start: out.p + i &* n, count: n)) } catch { errors.set(i, error) }
        }
        if let first = errors.values.first { throw first }
    }

    /// A one-line description of the preprocessing, for cache keys: equal descriptions give equal inputs.
    public var digest: String {
        let c = config
        return "v1 \(c.height)x\(c.width) \(c.colorOrder) scale=\(c.scale.bitPattern) bias=\(c.bias.map(\.bitPattern)) "
            + "mean=\(c.mean.map(\.bitPattern)) std=\(c.std.map(\.bitPattern)) resize=\(c.resize):\(c.resizeTo ?? 0) "
            + "crop=\(c.crop)" + (c.padValue.map { " pad=\($0.bitPattern)" } ?? "")
    }

    /// RGB → 8-bit luminance with PIL's weights: (19595 R + 38470 G + 7471 B + 32768) >> 16.
    static func gray(_ rgb: [UInt8]) -> [UInt8] {
        let n = rgb.count / 3
        var out = [UInt8](repeating: 0, count: n)
        rgb.withUnsafeBufferPointer { s in
            out.withUnsafeMutableBufferPointer { d in
                for i in 0..<n {
                    let r = Int(s[i &* 3]), g = Int(s[i &* 3 &+ 1]), b = Int(s[i &* 3 &+ 2])
                    d[i] = UInt8(truncatingIfNeeded: (r &* 19595 &+ g &* 38470 &+ b &* 7471 &+ 32768) >> 16)
                }
            }
        }
        return out
    }
}

/// The affine map from a photo's pixels to the model input's: input = photo · scale + offset, per axis.
public struct ImageGeometry: Equatable, Sendable {
    public var scaleX: Double
    public var scaleY: Double
    public var offsetX: Double
    public var offsetY: Double
    /// The photo's size.
    public var width: Int
    public var height: Int

    public init(scaleX: Double, scaleY: Double, offsetX: Double, offsetY: Double, width: Int, height: Int) {
        self.scaleX = scaleX; self.scaleY = scaleY; self.offsetX = offsetX; self.offsetY = offsetY
        self.width = width; self.height = height
    }

    /// A box in input pixels as photo pixels, clipped to the photo.
    public func toPhoto(_ b: BoundingBox) -> BoundingBox {
        let x1 = (b.x - offsetX) / scaleX, y1 = (b.y - offsetY) / scaleY
        let x2 = (b.maxX - offsetX) / scaleX, y2 = (b.maxY - offsetY) / scaleY
        return BoundingBox(x1: x1, y1: y1, x2: x2, y2: y2).clipped(width: Double(width), height: Double(height))
    }

    /// A box in photo pixels as input pixels.
    public func toInput(_ b: BoundingBox) -> BoundingBox {
        BoundingBox(x1: b.x * scaleX + offsetX, y1: b.y * scaleY + offsetY, x2: b.maxX * scaleX + offsetX, y2: b.maxY * scaleY + offsetY)
    }
}
