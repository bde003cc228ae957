/// Where a PNG or JPEG file goes wrong, found by walking its chunks or markers: libpng and libjpeg-turbo say what
/// failed ("truncated", "CRC error", "Huffman table 0x01 was not defined") but not where. Used only after a decoder
/// refused the bytes, to add the place (a chunk or segment and its byte offset) to the error. Reads only inside the
/// buffer; allocates only the text it returns.
enum ImageStructure {
    /// The place, for a refusal: the first structural problem (the end of the file inside a chunk or segment, a bad
    /// length, a chunk CRC that does not match), else the part the decoder's `message` names (a PNG chunk type),
    /// else the part where the decoder was working (the image data: the first IDAT, the last JPEG scan).
    static func place(_ b: UnsafeBufferPointer<UInt8>, png: Bool, message: String) -> String {
        png ? pngPlace(b, message: message) : jpegPlace(b, message: message)
    }

    static func be32(_ b: UnsafeBufferPointer<UInt8>, _ at: Int) -> UInt32 {
        (0..<4).reduce(UInt32(0)) { $0 << 8 | UInt32(b[at + $1]) }
    }

    // MARK: PNG

    static func pngPlace(_ b: UnsafeBufferPointer<UInt8>, message: String) -> String {
        let n = b.count
        guard n >= 8 else { return "the file ends at byte \(n), inside the 8-byte signature" }
        var at = 8
        var firstIDAT: Int?
        var chunks: [(type: String, at: Int)] = []
        var last = "the signature"
        while true {
            if at == n { return "the file ends at byte \(n), after \(last), without an IEND chunk" }
            guard n - at >= 8 else { return "the file ends at byte \(n), inside the header of the chunk at byte \(at)" }
            let length = Int(be32(b, at))
            let type = String(decoding: UnsafeBufferPointer(rebasing: b[(at + 4)..<(at + 8)]), as: UTF8.self)
            guard length <= Int(Int32.max) else { return "the \(type) chunk at byte \(at) claims \(length) bytes (more than 2^31 − 1)" }
            guard length <= n - at - 12 else {
                return "the file ends at byte \(n), inside the \(type) chunk at byte \(at) (it claims \(length) bytes)"
            }
            let stored = be32(b, at + 8 + length)
            if CRC32.checksum(b[(at + 4)..<(at + 8 + length)]) != stored {
                return "the \(type) chunk at byte \(at): its CRC does not match"
            }
            chunks.append((type, at))
            if type == "IDAT", firstIDAT == nil { firstIDAT = at }
            if type == "IEND" { break }
            last = "the \(type) chunk at byte \(at)"
            at += 12 + length
        }
        // Structurally whole: libpng's messages start with the chunk they concern ("IDAT: …", "tEXt: …").
        let named = String(message.prefix(while: { $0 != ":" }))
        if named.count == 4, let c = chunks.first(where: { $0.type == named }) { return "the \(named) chunk at byte \(c.at)" }
        if let i = firstIDAT { return "the image data (IDAT chunks from byte \(i))" }
        return "the chunks before the image data (no IDAT chunk)"
    }

    /// Checked before libpng sees the bytes: the first chunk (up to IEND) whose claimed length does not fit in
    /// what is left of the file, or is past 2^31 − 1, as a place; nil when every chunk fits. libpng allocates a
    /// chunk's claimed length before it reads the data (a 117-byte file whose zTXt claims 1.76 GB took 1.8 GB of
    /// memory and 2 s before libpng found the end of the data), so a lie is refused here instead.
    static func pngOverrun(_ b: UnsafeBufferPointer<UInt8>) -> String? {
        let n = b.count
        var at = 8
        while n - at >= 8 {
            let length = Int(be32(b, at))
            // The type as text only for a refusal: this runs before every PNG decode.
            func type() -> String { String(decoding: UnsafeBufferPointer(rebasing: b[(at + 4)..<(at + 8)]), as: UTF8.self) }
            guard length <= Int(Int32.max) else { return "the \(type()) chunk at byte \(at) claims \(length) bytes (more than 2^31 − 1)" }
            guard length <= n - at - 12 else {
                return "the file ends at byte \(n), inside the \(type()) chunk at byte \(at) (it claims \(length) bytes)"
            }
            if be32(b, at + 4) == 0x4945_4E44 { return nil }   // "IEND"
            at += 12 + length
        }
        return nil
    }

    // MARK: JPEG

    static let markerNames: [UInt8: String] = {
        var names: [UInt8: String] = [0xC4: "DHT", 0xC8: "JPG", 0xCC: "DAC", 0xD8: "SOI", 0xD9: "EOI", 0xDA: "SOS",
                                      0xDB: "DQT", 0xDC: "DNL", 0xDD: "DRI", 0xDE: "DHP", 0xDF: "EXP", 0xFE: "COM"]
        for m in UInt8(0xC0)...0xCF where names[m] == nil { names[m] = "SOF\(m - 0xC0)" }
        for m in UInt8(0xE0)...0xEF { names[m] = "APP\(m - 0xE0)" }
        return names
    }()

    static func markerName(_ m: UInt8) -> String { markerNames[m] ?? "marker 0xFF\(String(m, radix: 16, uppercase: true))" }

    /// Words of libjpeg's messages and the segment they concern (the first of that kind is the place).
    static let jpegMessageSegments: [(words: String, segment: String)] = [
        ("precision", "SOF"), ("sampling", "SOF"), ("component", "SOF"), ("image size", "SOF"), ("empty jpeg", "SOF"),
        ("huffman table", "DHT"), ("quantization table", "DQT"), ("restart", "DRI"), ("adobe", "APP14"),
        ("jfif", "APP0"), ("sos", "SOS"), ("scan", "SOS"),
    ]

    static func jpegPlace(_ b: UnsafeBufferPointer<UInt8>, message: String) -> String {
        let n = b.count
        guard n >= 2, b[0] == 0xFF, b[1] == 0xD8 else { return "byte 0 (no SOI marker)" }
        var at = 2
        var last = "the SOI marker"
        var lastScan: Int?
        var segments: [(name: String, at: Int)] = []
        while true {
            guard at < n else { return "the file ends at byte \(n), after \(last), without an EOI marker" }
            guard b[at] == 0xFF else {
                return "byte \(at), after \(last): 0x\(String(b[at], radix: 16, uppercase: true)) where a marker (0xFF) belongs"
            }
            var m = at + 1
            while m < n, b[m] == 0xFF { m += 1 }           // fill bytes
            guard m < n else { return "the file ends at byte \(n), inside the marker at byte \(at)" }
            let marker = b[m]
            let name = markerName(marker)
            if marker == 0xD9 { break }
            if (0xD0...0xD7).contains(marker) || marker == 0x01 { last = "the \(name) marker at byte \(at)"; at = m + 1; continue }
            guard n - m - 1 >= 2 else { return "the file ends at byte \(n), inside the length of the \(name) segment at byte \(at)" }
            let length = Int(b[m + 1]) << 8 | Int(b[m + 2])
            guard length >= 2 else { return "the \(name) segment at byte \(at) claims a length of \(length) (at least 2)" }
            guard length <= n - m - 1 else {
                return "the file ends at byte \(n), inside the \(name) segment at byte \(at) (it claims \(length) bytes)"
            }
            var next = m + 1 + length
            segments.append((name, at))
            if marker == 0xDA {
                // Entropy-coded data: up to the next marker that is neither a stuffed 0xFF00 nor a restart marker.
                lastScan = at
                while true {
                    guard next < n - 1 else { return "the file ends at byte \(n), inside the scan that starts at byte \(at)" }
                    if b[next] == 0xFF, b[next + 1] != 0x00, !(0xD0...0xD7).contains(b[next + 1]), b[next + 1] != 0xFF { break }
                    next += 1
                }
                last = "the scan that starts at byte \(at)"
            } else {
                last = "the \(name) segment at byte \(at)"
            }
            at = next
        }
        let lower = message.lowercased()
        if let kind = jpegMessageSegments.first(where: { lower.contains($0.words) })?.segment,
           let seg = segments.first(where: { $0.name.hasPrefix(kind) && ($0.name.count <= kind.count + 2) }) {
            return seg.name == "SOS" ? "the scan that starts at byte \(seg.at)" : "the \(seg.name) segment at byte \(seg.at)"
        }
        if let s = lastScan { return "the scan that starts at byte \(s)" }
        return "the segments before the EOI marker (no SOS scan)"
    }
}
