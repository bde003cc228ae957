import CSndFile
import Foundation
import MLToolCore
import MLToolData

/// Decodes WAV (PCM 8/16/24/32-bit, 32/64-bit float), FLAC and Ogg Vorbis through libsndfile into a mono `AudioClip`
/// at the file's rate. The file is read whole (under `InputLimits.maxFileBytes`); a WAV's chunks are checked on those
/// bytes first (`WAVChunks`: truncation, a header that lies about its length, an unsupported codec, named with the
/// byte), and every file's declared duration against `InputLimits.maxAudioSeconds` before a sample is decoded.
public enum AudioDecoder {
    /// libsndfile's subtypes mltool decodes, by container.
    static let supported: [Int32: Set<Int32>] = {
        let pcm: Set<Int32> = [SF_FORMAT_PCM_U8, SF_FORMAT_PCM_S8, SF_FORMAT_PCM_16, SF_FORMAT_PCM_24, SF_FORMAT_PCM_32,
                               SF_FORMAT_FLOAT, SF_FORMAT_DOUBLE].map { Int32($0) }.reduce(into: []) { $0.insert($1) }
        let flac: Set<Int32> = [SF_FORMAT_PCM_S8, SF_FORMAT_PCM_16, SF_FORMAT_PCM_24].map { Int32($0) }.reduce(into: []) { $0.insert($1) }
        return [Int32(SF_FORMAT_WAV): pcm, Int32(SF_FORMAT_WAVEX): pcm,
                Int32(SF_FORMAT_FLAC): flac, Int32(SF_FORMAT_OGG): [Int32(SF_FORMAT_VORBIS)]]
    }()

    /// The container names of `supported`'s keys.
    static let containerNames: [Int32: String] = [
        Int32(SF_FORMAT_WAV): "WAV", Int32(SF_FORMAT_WAVEX): "WAV", Int32(SF_FORMAT_FLAC): "FLAC",
        Int32(SF_FORMAT_OGG): "Ogg",
    ]

    /// Reads and decodes `file`.
    public static func decode(file: String, maxSeconds: Int = InputLimits.maxAudioSeconds) throws -> AudioClip {
        try decode(bytes: try ImageDecoder.readFile(file), file: file, maxSeconds: maxSeconds)
    }

    /// Decodes the bytes of a file; `file` names it in errors.
    public static func decode(bytes: [UInt8], file: String, maxSeconds: Int = InputLimits.maxAudioSeconds) throws -> AudioClip {
        guard !bytes.isEmpty else { throw AudioError.emptyFile(file: file) }
        if WAVChunks.isRIFF(bytes) {
            _ = try WAVChunks(bytes: bytes, file: file, maxSeconds: maxSeconds)
        }
        return try bytes.withUnsafeBufferPointer { b -> AudioClip in
            var memory = mlt_sf_memory(bytes: b.baseAddress, length: sf_count_t(b.count), position: 0)
            var info = SF_INFO()
            guard let sf = mlt_sf_open_memory(&memory, &info) else {
                throw AudioError.notAudio(file: file, reason: String(cString: sf_strerror(nil)))
            }
            defer { sf_close(sf) }
            return try read(sf, info: info, file: file, maxSeconds: maxSeconds)
        }
    }

    /// Checks what `sf` declares, then decodes it a block at a time and averages the channels.
    private static func read(_ sf: OpaquePointer, info: SF_INFO, file: String, maxSeconds: Int) throws -> AudioClip {
        let container = info.format & Int32(SF_FORMAT_TYPEMASK)
        let subtype = info.format & Int32(SF_FORMAT_SUBMASK)
        let subtypeName = mlt_sf_subtype_name(info.format).map { String(cString: $0) } ?? String(format: "subtype 0x%04x", subtype)
        guard let containerName = containerNames[container], supported[container]?.contains(subtype) == true else {
            let name = containerNames[container] ?? String(format: "container 0x%06x", container)
            throw AudioError.unsupportedCodec(file: file, codec: "\(name), \(subtypeName)")
        }
        let codec = "\(containerName), \(subtypeName)"
        guard info.channels >= 1 else { throw AudioError.invalidHeader(file: file, what: "the channel count", value: "\(info.channels)") }
        guard info.samplerate >= 1 else { throw AudioError.invalidHeader(file: file, what: "the sample rate", value: "\(info.samplerate) Hz") }
        guard info.frames >= 0 else { throw AudioError.invalidHeader(file: file, what: "the frame count", value: "\(info.frames)") }
        let seconds = Double(info.frames) / Double(info.samplerate)
        guard seconds <= Double(maxSeconds) else { throw AudioError.tooLong(file: file, seconds: seconds, limit: maxSeconds) }
        let frames = Int(info.frames), channels = Int(info.channels)
        _ = try Checked.mul(frames, channels, file: file, what: "frames × channels")

        var mono = [Float](repeating: 0, count: frames)
        let block = 4096
        var interleaved = [Float](repeating: 0, count: block * channels)
        var done = 0
        while done < frames {
            let want = min(block, frames - done)
            let got = Int(interleaved.withUnsafeMutableBufferPointer { sf_readf_float(sf, $0.baseAddress, sf_count_t(want)) })
            if got <= 0 { break }
            let scale = 1 / Float(channels)
            for f in 0..<got {
                var s: Float = 0
                for c in 0..<channels { s += interleaved[f * channels + c] }
                mono[done + f] = channels == 1 ? s : s * scale
            }
            done += got
        }
        guard done == frames else {
            let reason = sf_error(sf) == 0 ? "the data ends there" : String(cString: sf_strerror(sf))
            throw AudioError.truncated(file: file, format: containerName,
                                       place: "decoded \(done) of the \(frames) frames its header declares: \(reason)")
        }
        return AudioClip(samples: mono, sampleRate: Int(info.samplerate), channels: channels, codec: codec)
    }
}
