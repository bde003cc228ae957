import Foundation
import MLToolCore
import MLToolTestSupport
import Testing
@testable import MLToolAudio

@Suite struct AudioDecoderTests {
    /// Every encoding of the FSDD clip (PCM u8/16/24/32, float, double, FLAC) gives the independent reader's samples
    /// exactly (the same fractions of 2^(bits−1)); the stereo mixdown within 1e-7 (measured 0: (l + r)/2 of 16-bit
    /// values is exact in float32); the Ogg Vorbis bell within 1e-7 of soundfile's decode averaged in float64
    /// (measured 3.0e-8: our float32 average of the two channels).
    @Test func decodesEveryEncodingAsTheIndependentReader() throws {
        guard let manifest = try AudioFixtures.manifest() else { return }
        for entry in manifest.decode {
            let clip = try AudioDecoder.decode(file: AudioFixtures.path(entry.file))
            #expect(clip.sampleRate == entry.rate, "\(entry.file)")
            #expect(clip.channels == entry.channels, "\(entry.file)")
            let expected = try AudioFixtures.floats(entry.expected)
            #expect(clip.samples.count == expected.count, "\(entry.file)")
            let tolerance = entry.file.hasSuffix(".oga") || entry.channels > 1 ? 1e-7 : 0
            #expect(assertClose(clip.samples, expected, atol: tolerance, entry.file))
        }
    }

    @Test func namesTheCodec() throws {
        guard try AudioFixtures.manifest() != nil else { return }
        #expect(try AudioDecoder.decode(file: AudioFixtures.path("speech-24.wav")).codec == "WAV, Signed 24 bit PCM")
        #expect(try AudioDecoder.decode(file: AudioFixtures.path("speech.flac")).codec == "FLAC, Signed 16 bit PCM")
        #expect(try AudioDecoder.decode(file: AudioFixtures.path("bell.oga")).codec == "Ogg, Vorbis")
    }

    /// A WAV built in code decodes to its samples / 32768.
    @Test func decodesABuiltWAV() throws {
        let samples: [Int16] = [0, 1, -1, 32767, -32768, 1000]
        let clip = try AudioDecoder.decode(bytes: WAVBuilder(samples: samples).bytes, file: "built.wav")
        #expect(clip.samples == samples.map { Float($0) / 32768 })
        #expect(!clip.isSilent)
    }

    /// Silence is no error: the clip says what it gives.
    @Test func silenceIsAClipThatSaysSo() throws {
        let clip = try AudioDecoder.decode(bytes: WAVBuilder(samples: [Int16](repeating: 0, count: 8000)).bytes, file: "quiet.wav")
        #expect(clip.isSilent)
        #expect(clip.samples.count == 8000)
        #expect(clip.silenceNote(file: "quiet.wav") == "quiet.wav: silent: 8000 samples (1.0 s) all 0; its windows get the embedding of silence")
        let empty = try AudioDecoder.decode(bytes: WAVBuilder(samples: []).bytes, file: "none.wav")
        #expect(empty.silenceNote(file: "none.wav") == "none.wav: silent: no samples; its windows get the embedding of silence")
    }
}

/// Bad audio, each case with its exact message (the acceptance line: a truncated WAV, a header that lies
/// about its length, an unsupported codec, a 10-hour file refused from its header).
@Suite struct AudioCorruptionTests {
    enum Case: CaseIterable {
        case truncatedData, truncatedChunkHeader, lyingRIFFSize, unsupportedCodec, tenHours, notAudio, empty, noFormat

        var bytes: [UInt8] {
            let second = [Int16](repeating: 100, count: 8000)
            switch self {
            case .truncatedData: return WAVBuilder(samples: second, cutAt: 44 + 6000).bytes
            case .truncatedChunkHeader: return WAVBuilder(samples: second, cutAt: 40).bytes
            case .lyingRIFFSize: return WAVBuilder(samples: second, riffSize: 1_000_036).bytes
            case .unsupportedCodec: return WAVBuilder(formatTag: 0x55, samples: second).bytes
            case .tenHours: return WAVBuilder(samples: second, dataSize: 576_000_000).bytes
            case .notAudio: return Array("just some text, not a sound\n".utf8)
            case .empty: return []
            case .noFormat: return Array(WAVBuilder(samples: second).bytes.prefix(12)) + Array("LIST".utf8) + [4, 0, 0, 0] + Array("INFO".utf8)
            }
        }

        var message: String {
            switch self {
            case .truncatedData:
                return "clip.wav: truncated WAV: byte 36: the 'data' chunk declares 16000 bytes of samples, the file ends 6000 bytes into them"
            case .truncatedChunkHeader:
                return "clip.wav: truncated WAV: byte 36: a chunk header needs 8 bytes, only 4 remain"
            case .lyingRIFFSize:
                return "clip.wav: WAV header disagrees with the file: byte 4: the RIFF size says 1000036 bytes follow, the file has 16036 after it"
            case .unsupportedCodec:
                return "clip.wav: unsupported codec: WAV format tag 0x0055 (MPEG Layer III (MP3)) at byte 20; mltool reads PCM (8, 16, 24, 32 bit) and float WAV, FLAC and Ogg Vorbis"
            case .tenHours:
                return "clip.wav: the header declares 36000.0 s (10 h 0 min), more than the limit of 3600 s; MLTOOL_MAX_AUDIO_SECONDS sets the limit"
            case .notAudio:
                return "clip.wav: not an audio file mltool reads (WAV, FLAC, Ogg Vorbis): Format not recognised."
            case .empty:
                return "clip.wav: empty file (0 bytes)"
            case .noFormat:
                return "clip.wav: truncated WAV: no 'fmt ' chunk before the end (byte 24)"
            }
        }
    }

    @Test(arguments: Case.allCases) func refusesWithItsMessage(_ c: Case) {
        #expect {
            _ = try AudioDecoder.decode(bytes: c.bytes, file: "clip.wav", maxSeconds: 3600)
        } throws: { error in
            #expect("\(error)" == c.message)
            return (error as? AudioError)?.exitStatus == .dataError
        }
    }

    /// Every prefix of a valid WAV (header and data) either decodes or throws a typed error; none traps.
    @Test func everyPrefixThrowsOrDecodes() {
        let full = WAVBuilder(samples: [Int16](repeating: 7, count: 64)).bytes
        for n in 0..<full.count {
            do { _ = try AudioDecoder.decode(bytes: Array(full.prefix(n)), file: "p.wav") } catch { #expect(error is AudioError) }
        }
    }
}
