import MLToolCore

/// Errors raised while reading and resampling audio (a file that cannot be read or is too large to read whole is
/// `DataError`'s, from `ImageDecoder.readFile`). Every message names the file and what is wrong with it, at the
/// byte where there is one.
public enum AudioError: MLToolError, Equatable {
    /// The file is empty.
    case emptyFile(file: String)
    /// libsndfile recognises no audio format in the file.
    case notAudio(file: String, reason: String)
    /// A container or codec mltool does not read (for example MP3 or ADPCM in a WAV).
    case unsupportedCodec(file: String, codec: String)
    /// The file ends before what its header declares (a chunk header or the sample data is cut off).
    case truncated(file: String, format: String, place: String)
    /// A header field disagrees with the file around it.
    case lyingHeader(file: String, format: String, place: String)
    /// The header declares more than the duration limit (checked before any sample is decoded).
    case tooLong(file: String, seconds: Double, limit: Int)
    /// A header value that makes no sound: no channels, a sample rate of 0, ...
    case invalidHeader(file: String, what: String, value: String)
    /// Decoding stopped early.
    case decodeFailed(file: String, decoded: Int, declared: Int, reason: String)
    /// A resampling request that cannot be met.
    case invalidRate(what: String, value: Int)

    public var exitStatus: ExitStatus {
        switch self {
        case .invalidRate: return .usage
        default: return .dataError
        }
    }

    public var description: String {
        switch self {
        case let .emptyFile(file):
            return "\(file): empty file (0 bytes)"
        case let .notAudio(file, reason):
            return "\(file): not an audio file mltool reads (WAV, FLAC, Ogg Vorbis): \(reason)"
        case let .unsupportedCodec(file, codec):
            return "\(file): unsupported codec: \(codec); mltool reads PCM (8, 16, 24, 32 bit) and float WAV, FLAC and Ogg Vorbis"
        case let .truncated(file, format, place):
            return "\(file): truncated \(format): \(place)"
        case let .lyingHeader(file, format, place):
            return "\(file): \(format) header disagrees with the file: \(place)"
        case let .tooLong(file, seconds, limit):
            return "\(file): the header declares \(Self.duration(seconds)), more than the limit of \(limit) s; MLTOOL_MAX_AUDIO_SECONDS sets the limit"
        case let .invalidHeader(file, what, value):
            return "\(file): \(what) is \(value)"
        case let .decodeFailed(file, decoded, declared, reason):
            return "\(file): decoding stopped after \(decoded) of \(declared) frames: \(reason)"
        case let .invalidRate(what, value):
            return "\(what): \(value) Hz, expected a rate of at least 1 Hz"
        }
    }

    /// "36000.0 s (10 h 0 min)": seconds with one decimal, and hours and minutes when there are any.
    static func duration(_ seconds: Double) -> String {
        let s = (seconds * 10).rounded() / 10
        guard seconds >= 60 else { return "\(s) s" }
        let minutes = Int(seconds / 60)
        return "\(s) s (\(minutes / 60) h \(minutes % 60) min)"
    }
}
