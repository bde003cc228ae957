import Foundation
import MLToolCore

/// Seeded training-image augmentations. Each keeps the image size; the same image and seed always give the same
/// bytes, so every augmented variant can be cached like an original (`variant(seed:)` names it in the cache key).
public enum Augmentation: String, CaseIterable, Sendable {
    /// Mirror left–right.
    case flip
    /// Keep a random 80–100 % of each side and resize back (PIL bilinear).
    case crop
    /// Rotate by a random angle in ±15° about the centre (bilinear, edges clamped).
    case rotate
    /// Scale brightness by 2^u, u uniform in ±0.5 (half a stop).
    case exposure
    /// Gaussian blur with σ uniform in 0.5–1.5 pixels.
    case blur
    /// Add Gaussian noise with σ uniform in 2–8 (of 255).
    case noise

    /// Parses a comma-separated list such as "flip,crop,rotate".
    public static func parseList(_ text: String) throws -> [Augmentation] {
        try text.split(separator: ",").map { part in
            let name = String(part).trimmingSpaces()
            guard let a = Augmentation(rawValue: name) else {
                throw DataError.invalidArgument(what: "--augment", value: name,
                                                expected: allCases.map(\.rawValue).joined(separator: ", "))
            }
            return a
        }
    }

    /// The feature-cache variant name for this augmentation drawn with `seed`.
    public func variant(seed: UInt64) -> String { self == .flip ? "flip" : "\(rawValue)#\(seed)" }

    /// The augmented image.
    public func apply(to image: RGBImage, seed: UInt64) -> RGBImage {
        var rng = SplitMix64(seed: seed ^ 0x6175_676D_656E_74)  // "augment"
        switch self {
        case .flip: return image.oriented(2)
        case .crop: return Self.crop(image, &rng)
        case .rotate: return Self.rotate(image, degrees: (rng.nextUnit() * 2 - 1) * 15)
        case .exposure: return Self.scaled(image, by: powf(2, rng.nextUnit() - 0.5))
        case .blur: return Self.blur(image, sigma: 0.5 + rng.nextUnit())
        case .noise:
            let sigma = 2 + 6 * rng.nextUnit()
            var out = image
            for i in out.pixels.indices {
                // Box–Muller, one normal per draw pair
                let u1 = max(rng.nextUnit(), 1e-7), u2 = rng.nextUnit()
                let z = sqrtf(-2 * logf(u1)) * cosf(2 * .pi * u2)
                out.pixels[i] = Self.clamp8(Float(image.pixels[i]) + sigma * z)
            }
            return out
        }
    }

    private static func clamp8(_ v: Float) -> UInt8 { UInt8(max(0, min(255, v.rounded()))) }

    private static func scaled(_ image: RGBImage, by factor: Float) -> RGBImage {
        let lut = (0..<256).map { clamp8(Float($0) * factor) }
        return RGBImage(width: image.width, height: image.height, pixels: image.pixels.map { lut[Int($0)] })
    }

    private static func crop(_ image: RGBImage, _ rng: inout SplitMix64) -> RGBImage {
        let w = image.width, h = image.height
        let cw = max(1, Int(Float(w) * (0.8 + 0.2 * rng.nextUnit())))
        let ch = max(1, Int(Float(h) * (0.8 + 0.2 * rng.nextUnit())))
        let x0 = Int(rng.next() % UInt64(w - cw + 1)), y0 = Int(rng.next() % UInt64(h - ch + 1))
        var sub = [UInt8](repeating: 0, count: cw * ch * 3)
        for y in 0..<ch {
            let s = ((y0 + y) * w + x0) * 3
            sub.replaceSubrange((y * cw * 3)..<((y + 1) * cw * 3), with: image.pixels[s..<(s + cw * 3)])
        }
        let back = ImageResampler.resize(sub, width: cw, height: ch, channels: 3, toWidth: w, toHeight: h)
        return RGBImage(width: w, height: h, pixels: back)
    }

    static func rotate(_ image: RGBImage, degrees: Float) -> RGBImage {
        let w = image.width, h = image.height
        let a = degrees * .pi / 180, c = cosf(a), s = sinf(a)
        let cx = Float(w - 1) / 2, cy = Float(h - 1) / 2
        var out = [UInt8](repeating: 0, count: image.pixels.count)
        image.pixels.withUnsafeBufferPointer { src in
            for y in 0..<h {
                for x in 0..<w {
                    // inverse map: where in the source does output (x, y) come from
                    let dx = Float(x) - cx, dy = Float(y) - cy
                    let sx = min(max(c * dx + s * dy + cx, 0), Float(w - 1))
                    let sy = min(max(-s * dx + c * dy + cy, 0), Float(h - 1))
                    let x0 = Int(sx), y0 = Int(sy), x1 = min(x0 + 1, w - 1), y1 = min(y0 + 1, h - 1)
                    let fx = sx - Float(x0), fy = sy - Float(y0)
                    for ch in 0..<3 {
                        let p00 = Float(src[(y0 * w + x0) * 3 + ch]), p01 = Float(src[(y0 * w + x1) * 3 + ch])
                        let p10 = Float(src[(y1 * w + x0) * 3 + ch]), p11 = Float(src[(y1 * w + x1) * 3 + ch])
                        let top = p00 + (p01 - p00) * fx, bottom = p10 + (p11 - p10) * fx
                        out[(y * w + x) * 3 + ch] = clamp8(top + (bottom - top) * fy)
                    }
                }
            }
        }
        return RGBImage(width: w, height: h, pixels: out)
    }

    static func blur(_ image: RGBImage, sigma: Float) -> RGBImage {
        let r = Int((3 * sigma).rounded(.up))
        var k = (-r...r).map { expf(-Float($0 * $0) / (2 * sigma * sigma)) }
        let total = k.reduce(0, +)
        k = k.map { $0 / total }
        let w = image.width, h = image.height
        func pass(_ src: [Float], horizontal: Bool) -> [Float] {
            var dst = [Float](repeating: 0, count: src.count)
            for y in 0..<h {
                for x in 0..<w {
                    for ch in 0..<3 {
                        var acc: Float = 0
                        for t in -r...r {
                            let xx = horizontal ? min(max(x + t, 0), w - 1) : x
                            let yy = horizontal ? y : min(max(y + t, 0), h - 1)
                            acc += k[t + r] * src[(yy * w + xx) * 3 + ch]
                        }
                        dst[(y * w + x) * 3 + ch] = acc
                    }
                }
            }
            return dst
        }
        let out = pass(pass(image.pixels.map(Float.init), horizontal: true), horizontal: false)
        return RGBImage(width: w, height: h, pixels: out.map(clamp8))
    }
}
