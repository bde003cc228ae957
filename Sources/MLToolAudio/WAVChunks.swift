import MLToolCore

/// A WAV file's chunk layout, checked on its bytes before libsndfile decodes it, so that each way a WAV can be wrong
/// is named with its byte: a chunk header or the sample data cut off (truncated), a RIFF size that claims more than
/// the file holds (a header that lies about its length), a codec that is not PCM or float, a declared duration over
/// the limit (from the data chunk's size, before any sample is read).
///
///     offset 0   "RIFF", u32 size of what follows (file length − 8), "WAVE"
///     then chunks: 4-byte id, u32 size, size bytes, a pad byte when size is odd
///     "fmt ": u16 format tag (1 PCM, 3 float, 0xFFFE extensible: the tag is the first 2 bytes of its sub-format
///             GUID at body offset 24), u16 channels, u32 rate, u32 bytes/s, u16 block align, u16 bits
///     "data": the samples (a size of 0xFFFFFFFF means "to the end of the file": a streaming writer's header)
struct WAVChunks {
    var formatTag: UInt16 = 0
    var channels = 0
    var sampleRate = 0
    var blockAlign = 0
    var bitsPerSample = 0
    var dataOffset = 0
    var dataSize = 0

    /// WAVE format tags that are not PCM or float, named for the error.
    static let codecNames: [UInt16: String] = [
        0x0002: "Microsoft ADPCM", 0x0006: "A-law", 0x0007: "µ-law", 0x0011: "IMA ADPCM", 0x0031: "GSM 6.10",
        0x0050: "MPEG", 0x0055: "MPEG Layer III (MP3)", 0x0161: "Windows Media Audio", 0x2000: "AC-3",
    ]

    static func isRIFF(_ b: [UInt8]) -> Bool {
        b.count >= 4 && b[0] == 0x52 && b[1] == 0x49 && b[2] == 0x46 && b[3] == 0x46
    }

    init(bytes b: [UInt8], file: String, maxSeconds: Int) throws {
        func u16(_ at: Int) -> Int { Int(b[at]) | Int(b[at + 1]) << 8 }
        func u32(_ at: Int) -> Int { u16(at) | u16(at + 2) << 16 }
        func id(_ at: Int) -> String { String(decoding: b[at..<at + 4].map { (0x20...0x7e).contains($0) ? $0 : 0x3f }, as: UTF8.self) }
        guard b.count >= 12 else {
            throw AudioError.truncated(file: file, format: "WAV", place: "the RIFF header needs 12 bytes, the file has \(b.count)")
        }
        guard id(8) == "WAVE" else {
            throw AudioError.notAudio(file: file, reason: "byte 8: a RIFF file of form '\(id(8))', not 'WAVE'")
        }
        let riffSize = u32(4)
        var at = 12
        var sawFormat = false
        while at < b.count {
            guard b.count - at >= 8 else {
                throw AudioError.truncated(file: file, format: "WAV", place: "byte \(at): a chunk header needs 8 bytes, only \(b.count - at) remain")
            }
            let chunk = id(at), size = u32(at + 4), body = at + 8
            if chunk == "fmt " {
                guard size >= 16, b.count - body >= 16 else {
                    throw AudioError.truncated(file: file, format: "WAV", place: "byte \(at): the 'fmt ' chunk needs 16 bytes, \(min(size, b.count - body)) are there")
                }
                formatTag = UInt16(u16(body))
                channels = u16(body + 2); sampleRate = u32(body + 4); blockAlign = u16(body + 12); bitsPerSample = u16(body + 14)
                if formatTag == 0xFFFE, size >= 26, b.count - body >= 26 { formatTag = UInt16(u16(body + 24)) }
                guard formatTag == 1 || formatTag == 3 else {
                    let name = Self.codecNames[formatTag].map { " (\($0))" } ?? ""
                    throw AudioError.unsupportedCodec(file: file, codec: "WAV format tag 0x\(String(formatTag, radix: 16, uppercase: false).leftPadded(4))\(name) at byte \(body)")
                }
                sawFormat = true
            } else if chunk == "data" {
                guard sawFormat else {
                    throw AudioError.lyingHeader(file: file, format: "WAV", place: "byte \(at): the 'data' chunk comes before any 'fmt ' chunk")
                }
                dataOffset = body
                let remaining = b.count - body
                let streamed = size == 0xFFFF_FFFF
                dataSize = streamed ? remaining : size
                if blockAlign > 0, sampleRate > 0 {
                    let seconds = Double(dataSize / blockAlign) / Double(sampleRate)
                    guard seconds <= Double(maxSeconds) else { throw AudioError.tooLong(file: file, seconds: seconds, limit: maxSeconds) }
                }
                guard dataSize <= remaining else {
                    throw AudioError.truncated(file: file, format: "WAV", place: "byte \(at): the 'data' chunk declares \(size) bytes of samples, the file ends \(remaining) bytes into them")
                }
                guard riffSize >= 4, riffSize <= b.count - 8 || streamed || riffSize == 0xFFFF_FFFF else {
                    throw AudioError.lyingHeader(file: file, format: "WAV", place: "byte 4: the RIFF size says \(riffSize) bytes follow, the file has \(b.count - 8) after it")
                }
                return
            }
            // A chunk ends on an even offset; one that claims more than the file holds is truncated.
            let next = body + size + (size & 1)
            guard next <= b.count || (next == b.count + 1 && size & 1 == 1) else {
                throw AudioError.truncated(file: file, format: "WAV", place: "byte \(at): the '\(chunk)' chunk declares \(size) bytes, only \(b.count - body) remain")
            }
            at = next
        }
        throw AudioError.truncated(file: file, format: "WAV", place: sawFormat ? "no 'data' chunk before the end (byte \(b.count))" : "no 'fmt ' chunk before the end (byte \(b.count))")
    }
}

private extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
