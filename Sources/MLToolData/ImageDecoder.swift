import CPNG
import CTurboJPEG
import Foundation
import MLToolCore

/// Decodes JPEG and PNG files to upright 8-bit RGB.
///
/// The format is recognised by content, never by extension. JPEG goes through the TurboJPEG API (error codes, never
/// `exit()`): baseline, progressive, grayscale, CMYK/YCCK (Adobe-inverted when an APP14 marker is present); a
/// truncated file is an error, not a grey-filled image. PNG goes through libpng's simplified API: grayscale, palette,
/// 16-bit (taken as sRGB-encoded, i.e. scaled to 8 bits) and alpha, which is composited over white (PIL's
/// `convert("RGB")` would drop it; for opaque images the two agree). EXIF orientation (JPEG APP1, PNG eXIf) is
/// applied. The pixel count is checked from the header before any pixel buffer is allocated.
public enum ImageDecoder {
    /// The default decompression-bomb cap: 64 megapixels, or `MLTOOL_MAX_PIXELS` (`InputLimits.maxImagePixels`).
    public static let defaultMaxPixels = InputLimits.maxImagePixels

    /// Decodes the image file at `path`.
    public static func decode(path: String, maxPixels: Int = defaultMaxPixels) throws -> RGBImage {
        try decode(bytes: readFile(path), name: path, maxPixels: maxPixels)
    }

    /// Decodes an in-memory JPEG or PNG; `name` is used in error messages.
    public static func decode(bytes: [UInt8], name: String, maxPixels: Int = defaultMaxPixels) throws -> RGBImage {
        try bytes.withUnsafeBufferPointer { b in
            switch sniff(b) {
            case .jpeg: return try decodeJPEG(b, name: name, maxPixels: maxPixels)
            case .png: return try decodePNG(b, name: name, maxPixels: maxPixels)
            case nil: throw b.isEmpty ? DataError.emptyFile(file: name) : DataError.notAnImage(file: name, head: Array(b.prefix(8)))
            }
        }
    }

    /// The container formats recognised.
    public enum Format: Sendable { case jpeg, png }

    /// The format of `bytes` from its signature, or nil.
    public static func sniff(_ b: UnsafeBufferPointer<UInt8>) -> Format? {
        if b.count >= 3, b[0] == 0xFF, b[1] == 0xD8, b[2] == 0xFF { return .jpeg }
        let sig: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        if b.count >= 8, Array(b[0..<8]) == sig { return .png }
        return nil
    }

    /// The whole file, or `DataError.cannotRead` naming it (read once, then hashed and decoded from memory);
    /// `DataError.fileTooLarge` past `limit` bytes (checked on the size before reading, and while reading a file
    /// whose size is not known in advance).
    public static func readFile(_ path: String, limit: Int = InputLimits.maxFileBytes) throws -> [UInt8] {
        guard let f = fopen(path, "rb") else {
            throw DataError.cannotRead(file: path, reason: String(cString: strerror(errno)))
        }
        defer { fclose(f) }
        // One read into an array of the file's size; a file that changes while it is read is still read to its end.
        var info = stat()
        if fstat(fileno(f), &info) == 0, info.st_size > 0 {
            guard info.st_size <= limit else { throw DataError.fileTooLarge(file: path, size: Int(info.st_size), limit: limit) }
            let size = Int(info.st_size)
            var failed = false
            var out = [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
                count = fread(buffer.baseAddress, 1, size, f)
                failed = count < size && ferror(f) != 0
            }
            if failed { throw DataError.cannotRead(file: path, reason: String(cString: strerror(errno))) }
            if out.count < size { return out }
            out += try readRest(f, path: path, limit: limit, already: size)
            return out
        }
        return try readRest(f, path: path, limit: limit, already: 0)
    }

    /// The bytes from `f`'s position to its end, in 64 KiB reads.
    private static func readRest(_ f: UnsafeMutablePointer<FILE>, path: String, limit: Int, already: Int) throws -> [UInt8] {
        var out = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, f) }
            if n > 0 { out.append(contentsOf: chunk[0..<n]) }
            if already + out.count > limit { throw DataError.fileTooLarge(file: path, size: already + out.count, limit: limit) }
            if n < chunk.count {
                if ferror(f) != 0 { throw DataError.cannotRead(file: path, reason: String(cString: strerror(errno))) }
                return out
            }
        }
    }

    private static func checkPixels(_ w: Int, _ h: Int, name: String, format: String, maxPixels: Int) throws {
        guard w > 0, h > 0 else {
            throw DataError.corruptImage(file: name, format: format, reason: "image size \(w)×\(h)")
        }
        let (n, o) = w.multipliedReportingOverflow(by: h)
        if o || n > maxPixels { throw DataError.tooManyPixels(file: name, width: w, height: h, limit: maxPixels) }
    }

    // MARK: JPEG

    private static func decodeJPEG(_ b: UnsafeBufferPointer<UInt8>, name: String, maxPixels: Int) throws -> RGBImage {
        let meta = ImageMetadata.jpeg(b)
        guard let tj = tjInitDecompress() else {
            throw DataError.corruptImage(file: name, format: "JPEG", reason: "cannot initialise the decoder")
        }
        defer { tjDestroy(tj) }
        func failure() -> DataError {
            let message = tjGetErrorStr2(tj).map { String(cString: $0) } ?? "unknown error"
            let place = ImageStructure.place(b, png: false, message: message)
            if message.lowercased().contains("premature end") || meta.headerTruncated {
                return .truncatedImage(file: name, format: "JPEG", place: place)
            }
            return .corruptImage(file: name, format: "JPEG", reason: "\(message) (\(place))")
        }
        var w: Int32 = 0, h: Int32 = 0, subsamp: Int32 = 0, colorspace: Int32 = 0
        guard let base = b.baseAddress,
              tjDecompressHeader3(tj, base, UInt(b.count), &w, &h, &subsamp, &colorspace) == 0 else { throw failure() }
        try checkPixels(Int(w), Int(h), name: name, format: "JPEG", maxPixels: maxPixels)
        let cmyk = colorspace == Int32(TJCS_CMYK.rawValue) || colorspace == Int32(TJCS_YCCK.rawValue)
        let format = cmyk ? TJPF_CMYK : TJPF_RGB
        let channels = cmyk ? 4 : 3
        let count = Int(w) * Int(h)
        var raw = [UInt8](repeating: 0, count: count * channels)
        func run(_ flags: Int32) -> (ok: Bool, message: String) {
            let rc = raw.withUnsafeMutableBufferPointer { out in
                tjDecompress2(tj, base, UInt(b.count), out.baseAddress, w, 0, h, Int32(format.rawValue), flags)
            }
            return (rc == 0, tjGetErrorStr2(tj).map { String(cString: $0) } ?? "unknown error")
        }
        // TJFLAG_LIMITSCANS refuses progressive files with absurd scan counts (a CPU-time bomb). The first pass
        // stops at the first warning, so its message is that warning. libjpeg keeps only the first warning's text
        // and a later fatal error overwrites it, so a benign first warning (e.g. extraneous bytes) is accepted only
        // if a full second pass ends with the same message, i.e. without a fatal error.
        let first = run(TJFLAG_LIMITSCANS | TJFLAG_STOPONWARNING)
        if !first.ok {
            let lower = first.message.lowercased()
            let benign = !lower.contains("premature end") && Self.benignJPEGWarnings.contains { lower.contains($0) }
            guard benign, run(TJFLAG_LIMITSCANS).message == first.message else { throw failure() }
        }
        var image: RGBImage
        if cmyk {
            image = RGBImage(width: Int(w), height: Int(h), pixels: cmykToRGB(raw, inverted: meta.adobe))
        } else {
            image = RGBImage(width: Int(w), height: Int(h), pixels: raw)
        }
        if meta.orientation != 1 { image = image.oriented(meta.orientation) }
        return image
    }

    /// libjpeg warnings after which the image is still whole (PIL accepts these files too).
    static let benignJPEGWarnings = ["extraneous bytes before marker", "unknown adobe color transform",
                                     "unknown jfif revision", "bogus icc", "inconsistent progression",
                                     "invalid sos parameters for sequential", "unsupported jfif"]

    /// CMYK → RGB as PIL does it: R = (255 − C)(255 − K)/255. Adobe files store every channel inverted (255 − C), so
    /// there R = C'·K'/255.
    static func cmykToRGB(_ raw: [UInt8], inverted: Bool) -> [UInt8] {
        let n = raw.count / 4
        var out = [UInt8](repeating: 0, count: n * 3)
        raw.withUnsafeBufferPointer { s in
            out.withUnsafeMutableBufferPointer { d in
                for i in 0..<n {
                    var k = Int(s[i &* 4 &+ 3])
                    if !inverted { k = 255 &- k }
                    for c in 0..<3 {
                        var v = Int(s[i &* 4 &+ c])
                        if !inverted { v = 255 &- v }
                        let t = v &* k &+ 128
                        d[i &* 3 &+ c] = UInt8(truncatingIfNeeded: (t &+ (t >> 8)) >> 8)  // v·k/255, rounded
                    }
                }
            }
        }
        return out
    }

    // MARK: PNG

    private static func decodePNG(_ b: UnsafeBufferPointer<UInt8>, name: String, maxPixels: Int) throws -> RGBImage {
        var img = png_image()
        img.version = UInt32(PNG_IMAGE_VERSION)
        defer { png_image_free(&img) }
        func failure() -> DataError {
            let message = withUnsafeBytes(of: img.message) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            let lower = message.lowercased()
            let place = ImageStructure.place(b, png: true, message: message)
            if lower.contains("read beyond end") || lower.contains("not enough image data") || lower == "read error" {
                return .truncatedImage(file: name, format: "PNG", place: place)
            }
            return .corruptImage(file: name, format: "PNG", reason: "\(message.isEmpty ? "unknown error" : message) (\(place))")
        }
        if b.count >= 8, let place = ImageStructure.pngOverrun(b) {
            throw DataError.truncatedImage(file: name, format: "PNG", place: place)
        }
        guard png_image_begin_read_from_memory(&img, b.baseAddress, b.count) != 0 else { throw failure() }
        let w = Int(img.width), h = Int(img.height)
        try checkPixels(w, h, name: name, format: "PNG", maxPixels: maxPixels)
        img.flags |= UInt32(PNG_IMAGE_FLAG_16BIT_sRGB)  // 16-bit data is scaled, not treated as linear light
        let hasAlpha = img.format & UInt32(PNG_FORMAT_FLAG_ALPHA) != 0
        img.format = UInt32(PNG_FORMAT_RGB) | (hasAlpha ? UInt32(PNG_FORMAT_FLAG_ALPHA) : 0)
        let channels = hasAlpha ? 4 : 3
        var raw = [UInt8](repeating: 0, count: w * h * channels)
        let ok = raw.withUnsafeMutableBytes { out in
            png_image_finish_read(&img, nil, out.baseAddress, Int32(w * channels), nil)
        }
        guard ok != 0 else { throw failure() }
        if hasAlpha { raw = compositeOverWhite(raw) }
        let meta = ImageMetadata.png(b)
        var image = RGBImage(width: w, height: h, pixels: raw)
        if meta.orientation != 1 { image = image.oriented(meta.orientation) }
        return image
    }

    /// Straight (non-premultiplied) RGBA over a white background, in 8-bit sRGB values.
    static func compositeOverWhite(_ rgba: [UInt8]) -> [UInt8] {
        let n = rgba.count / 4
        var out = [UInt8](repeating: 0, count: n * 3)
        rgba.withUnsafeBufferPointer { s in
            out.withUnsafeMutableBufferPointer { d in
                for i in 0..<n {
                    let a = Int(s[i &* 4 &+ 3])
                    for c in 0..<3 {
                        let t = Int(s[i &* 4 &+ c]) &* a &+ 255 &* (255 &- a) &+ 128
                        d[i &* 3 &+ c] = UInt8(truncatingIfNeeded: (t &+ (t >> 8)) >> 8)
                    }
                }
            }
        }
        return out
    }
}
