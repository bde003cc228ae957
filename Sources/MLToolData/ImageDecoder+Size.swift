import CPNG
import CTurboJPEG

extension ImageDecoder {
    /// An image's upright width and height (EXIF orientation applied) from its header, without decoding pixels.
    public static func size(path: String) throws -> (width: Int, height: Int) {
        let bytes = try readFile(path)
        return try bytes.withUnsafeBufferPointer { b in
            switch sniff(b) {
            case .jpeg:
                guard let tj = tjInitDecompress() else {
                    throw DataError.corruptImage(file: path, format: "JPEG", reason: "cannot initialise the decoder")
                }
                defer { tjDestroy(tj) }
                var w: Int32 = 0, h: Int32 = 0, subsamp: Int32 = 0, colorspace: Int32 = 0
                guard let base = b.baseAddress, tjDecompressHeader3(tj, base, UInt(b.count), &w, &h, &subsamp, &colorspace) == 0 else {
                    let message = tjGetErrorStr2(tj).map { String(cString: $0) } ?? "unknown error"
                    throw DataError.corruptImage(file: path, format: "JPEG",
                                                 reason: "\(message) (\(ImageStructure.place(b, png: false, message: message)))")
                }
                let o = ImageMetadata.jpeg(b).orientation
                return o >= 5 ? (Int(h), Int(w)) : (Int(w), Int(h))
            case .png:
                var img = png_image()
                img.version = UInt32(PNG_IMAGE_VERSION)
                defer { png_image_free(&img) }
                if let place = ImageStructure.pngOverrun(b) {
                    throw DataError.truncatedImage(file: path, format: "PNG", place: place)
                }
                guard png_image_begin_read_from_memory(&img, b.baseAddress, b.count) != 0 else {
                    let message = withUnsafeBytes(of: img.message) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
                    throw DataError.corruptImage(file: path, format: "PNG",
                                                 reason: "unreadable header: \(message) (\(ImageStructure.place(b, png: true, message: message)))")
                }
                let o = ImageMetadata.png(b).orientation
                return o >= 5 ? (Int(img.height), Int(img.width)) : (Int(img.width), Int(img.height))
            case nil:
                throw b.isEmpty ? DataError.emptyFile(file: path) : DataError.notAnImage(file: path, head: Array(b.prefix(8)))
            }
        }
    }
}
