/// What the decoders need from an image's container beyond the pixels: the EXIF orientation and, for JPEG, the
/// Adobe APP14 marker (CMYK stored inverted). Parsed by hand, every read bounds-checked; malformed metadata is
/// ignored (orientation 1), as browsers and PIL do, because it never makes the pixels unusable.
struct ImageMetadata: Equatable {
    /// EXIF orientation 1…8 (1 = upright as stored).
    var orientation = 1
    /// An Adobe APP14 segment was present.
    var adobe = false
    /// For JPEG: the marker walk ran out of bytes before the start of scan (the header is cut short).
    var headerTruncated = false

    /// Walks a JPEG's marker segments up to the first SOS.
    static func jpeg(_ b: UnsafeBufferPointer<UInt8>) -> ImageMetadata {
        var m = ImageMetadata()
        var p = 2  // after SOI
        m.headerTruncated = true  // until the walk reaches SOS (or stops at garbage, which is not truncation)
        while p + 1 < b.count {
            guard b[p] == 0xFF else { m.headerTruncated = false; return m }
            var marker = b[p + 1]
            p += 2
            while marker == 0xFF, p < b.count { marker = b[p]; p += 1 }  // fill bytes
            if marker == 0xFF { return m }
            if marker == 0xDA || marker == 0xD9 { m.headerTruncated = false; return m }
            if (0xD0...0xD7).contains(marker) || marker == 0x01 { continue }
            guard p + 1 < b.count else { return m }
            let length = Int(b[p]) << 8 | Int(b[p + 1])
            guard length >= 2 else { m.headerTruncated = false; return m }
            guard p + length <= b.count else { return m }
            let seg = UnsafeBufferPointer(rebasing: b[(p + 2)..<(p + length)])
            if marker == 0xE1, seg.count >= 6, Array(seg[0..<6]) == Array("Exif\0\0".utf8) {
                if let o = exifOrientation(UnsafeBufferPointer(rebasing: seg[6...])) { m.orientation = o }
            } else if marker == 0xEE, seg.count >= 5, Array(seg[0..<5]) == Array("Adobe".utf8) {
                m.adobe = true
            }
            p += length
        }
        return m
    }

    /// Walks a PNG's chunks for an eXIf chunk (the bytes are already known to start with the PNG signature).
    static func png(_ b: UnsafeBufferPointer<UInt8>) -> ImageMetadata {
        var m = ImageMetadata()
        var p = 8
        while p + 8 <= b.count {
            let length = Int(be32(b, p))
            let type = Array(b[(p + 4)..<(p + 8)])
            guard length <= b.count - p - 8 else { return m }
            if type == Array("eXIf".utf8) {
                if let o = exifOrientation(UnsafeBufferPointer(rebasing: b[(p + 8)..<(p + 8 + length)])) {
                    m.orientation = o
                }
                return m
            }
            if type == Array("IEND".utf8) { return m }
            p += 12 + length
        }
        return m
    }

    /// Reads tag 0x0112 from IFD0 of a TIFF structure ("II*\0" or "MM\0*").
    static func exifOrientation(_ t: UnsafeBufferPointer<UInt8>) -> Int? {
        guard t.count >= 8 else { return nil }
        let little: Bool
        if t[0] == 0x49, t[1] == 0x49 { little = true } else if t[0] == 0x4D, t[1] == 0x4D { little = false } else {
            return nil
        }
        func u16(_ o: Int) -> Int? {
            guard o >= 0, o + 2 <= t.count else { return nil }
            return little ? Int(t[o]) | Int(t[o + 1]) << 8 : Int(t[o]) << 8 | Int(t[o + 1])
        }
        func u32(_ o: Int) -> Int? {
            guard let a = u16(o), let b = u16(o + 2) else { return nil }
            return little ? a | b << 16 : a << 16 | b
        }
        guard u16(2) == 42, let ifd = u32(4), let count = u16(ifd) else { return nil }
        for i in 0..<count {
            let e = ifd + 2 + i * 12
            guard let tag = u16(e) else { return nil }
            if tag == 0x0112 {
                guard u16(e + 2) == 3, let v = u16(e + 8), (1...8).contains(v) else { return nil }
                return v
            }
        }
        return nil
    }

    private static func be32(_ b: UnsafeBufferPointer<UInt8>, _ p: Int) -> UInt32 {
        UInt32(b[p]) << 24 | UInt32(b[p + 1]) << 16 | UInt32(b[p + 2]) << 8 | UInt32(b[p + 3])
    }
}
