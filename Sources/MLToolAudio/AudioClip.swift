/// A decoded recording: mono samples in −1…1 at the file's own rate (channels averaged).
public struct AudioClip: Sendable, Equatable {
    /// Mono samples, one per frame of the file.
    public var samples: [Float]
    /// Frames per second.
    public var sampleRate: Int
    /// The file's channel count before the mixdown.
    public var channels: Int
    /// What the file holds, in libsndfile's words: "WAV, Signed 16 bit PCM", "FLAC, 16 bit", "OGG, Vorbis".
    public var codec: String

    public init(samples: [Float], sampleRate: Int, channels: Int = 1, codec: String = "") {
        self.samples = samples
        self.sampleRate = sampleRate
        self.channels = channels
        self.codec = codec
    }

    /// Length in seconds.
    public var duration: Double { sampleRate > 0 ? Double(samples.count) / Double(sampleRate) : 0 }

    /// The largest absolute sample.
    public var peak: Float { samples.reduce(0) { max($0, abs($1)) } }

    /// Every sample is 0 (or there are none). Silence is no error: its features are the extractor's output for
    /// silence, and `silenceNote` says so where a person reads it.
    public var isSilent: Bool { peak == 0 }

    /// What a silent clip gives, for the progress line of the file that holds it.
    public func silenceNote(file: String) -> String {
        let length = samples.isEmpty ? "no samples" : "\(samples.count) samples (\(AudioError.duration(duration))) all 0"
        return "\(file): silent: \(length); its windows get the embedding of silence"
    }
}
