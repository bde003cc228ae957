/// A decoded 8-bit RGB image, upright (EXIF orientation already applied).
public struct RGBImage: Equatable, Sendable {
    public let width: Int
    public let height: Int
    /// R, G, B bytes, row-major, `width * height * 3` of them.
    public var pixels: [UInt8]

    /// An image from its pixels; `pixels.count` must be `width * height * 3` (a programming error otherwise).
    public init(width: Int, height: Int, pixels: [UInt8]) {
        precondition(width >= 0 && height >= 0 && pixels.count == width * height * 3, "RGBImage: size mismatch")
        self.width = width; self.height = height; self.pixels = pixels
    }

    /// The pixel at column `x`, row `y`.
    public func pixel(x: Int, y: Int) -> (r: UInt8, g: UInt8, b: UInt8) {
        let i = (y * width + x) * 3
        return (pixels[i], pixels[i + 1], pixels[i + 2])
    }
}
