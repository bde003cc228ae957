import CPNG
import Foundation

/// Encodes 8-bit RGB images as PNG with libpng's simplified write API (no setjmp, no temporary files).
public enum PNGEncoder {
    /// The PNG file bytes of `image`.
    public static func encode(_ image: RGBImage, name: String = "image") throws -> [UInt8] {
        guard image.width > 0, image.height > 0, image.width <= Int(UInt32.max), image.height <= Int(UInt32.max) else {
            throw DataError.cannotWrite(file: name, reason: "cannot encode a \(image.width)×\(image.height) image as PNG")
        }
        var png = png_image()
        png.version = UInt32(PNG_IMAGE_VERSION)
        png.width = UInt32(image.width)
        png.height = UInt32(image.height)
        png.format = UInt32(PNG_FORMAT_RGB)
        defer { png_image_free(&png) }
        let stride = Int32(clamping: image.width * 3)
        func failure() -> DataError {
            let message = withUnsafeBytes(of: png.message) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            return .cannotWrite(file: name, reason: "PNG encoding: \(message.isEmpty ? "unknown error" : message)")
        }
        // First call sizes the output, the second writes it.
        var size = 0
        let sized = image.pixels.withUnsafeBytes { px in
            png_image_write_to_memory(&png, nil, &size, 0, px.baseAddress, stride, nil)
        }
        guard sized != 0, size > 0 else { throw failure() }
        var out = [UInt8](repeating: 0, count: size)
        let written = out.withUnsafeMutableBytes { dst in
            image.pixels.withUnsafeBytes { px in
                png_image_write_to_memory(&png, dst.baseAddress, &size, 0, px.baseAddress, stride, nil)
            }
        }
        guard written != 0 else { throw failure() }
        return Array(out.prefix(size))
    }
}
