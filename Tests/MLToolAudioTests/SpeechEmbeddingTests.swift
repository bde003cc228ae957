import Foundation
import MLToolCore
import MLToolEngine
import MLToolImport
import MLToolTestSupport
import Testing
@testable import MLToolAudio

/// The mel front end and the imported embedding against LiteRT running pyopen-wakeword's two TFLite files on a real
/// recording (`Tests/Fixtures/speech/fetch_speech_embedding.py --references`, into .build/speech or $MLTOOL_SPEECH).
@Suite struct SpeechEmbeddingTests {
    struct References: Decodable { var audio: String; var samples: Int; var decibels: String; var frames: Int; var embedding: String }

    static let directory: String = ProcessInfo.processInfo.environment["MLTOOL_SPEECH"]
        ?? SharedDatasets.repository.appendingPathComponent(".build/speech").path

    static func path(_ name: String) -> String { (directory as NSString).appendingPathComponent(name) }

    static func floats(_ name: String) throws -> [Float] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path(name)))
        return data.withUnsafeBytes { raw in (0..<data.count / 4).map { raw.loadUnaligned(fromByteOffset: $0 * 4, as: Float.self) } }
    }

    static func references(sourceLocation: SourceLocation = #_sourceLocation) throws -> References? {
        let p = path("references.json")
        guard FileManager.default.fileExists(atPath: p) else {
            Oracles.missing("no \(p) (python3 Tests/Fixtures/speech/fetch_speech_embedding.py --references; needs pip ai-edge-litert)",
                            sourceLocation: sourceLocation)
            return nil
        }
        return try JSONDecoder().decode(References.self, from: Data(contentsOf: URL(fileURLWithPath: p)))
    }

    /// MelSpectrogram's decibels are melspectrogram.tflite's (LiteRT, 1 thread) within 5e-4 dB on a range of 80 dB
    /// (measured 6.7e-5 dB: our float32 FFT against the file's float32 DFT convolutions).
    @Test func melFrontEndMatchesLiteRT() throws {
        guard let refs = try Self.references() else { return }
        let audio = try Self.floats(refs.audio)
        #expect(audio.count == refs.samples)
        let ours = MelSpectrogram().decibels(audio)
        let expected = try Self.floats(refs.decibels)
        #expect(ours.count == refs.frames * MelSpectrogram.bands)
        #expect(assertClose(ours, expected, atol: 5e-4, "decibels"))
    }

    /// The FFT path gives the defining DFT's decibels within 1e-4 dB (measured 1.5e-5 dB) on random int16-range
    /// samples.
    @Test func fftMatchesTheReferenceDFT() {
        var g = SplitMix64(seed: 3)
        let x = (0..<2000).map { _ in (g.nextUnit() * 2 - 1) * 20000 }
        let mel = MelSpectrogram()
        #expect(assertClose(mel.decibels(x), mel.decibelsReference(x), atol: 1e-4, "fft"))
    }

    /// embedding_model.tflite imported by mltool and run by the engine gives LiteRT's 96 values within 1e-4 of their
    /// range (measured 3.5e-5 absolute, on values up to 12.6).
    @Test func importedEmbeddingMatchesLiteRT() throws {
        guard let refs = try Self.references() else { return }
        let audio = try Self.floats(refs.audio)
        let decibels = try Self.floats(refs.decibels)
        let window = decibels.prefix(SoundWindows.frames * MelSpectrogram.bands).map { $0 / 10 + 2 }
        let model = try TFLiteImporter.importModel(path: Self.path("embedding_model.tflite"), options: ImportOptions())
        let engine = try Engine(model: model, threads: 1)
        let input = try #require(model.metadata.graph?.inputs.first).name
        let out = try engine.run([input: Tensor(shape: [1, 76, 32, 1], data: Array(window))])
        let got: [Float] = try #require(out.values.first).data
        let expected = try Self.floats(refs.embedding)
        let range = Double((expected.max() ?? 0) - (expected.min() ?? 0))
        #expect(assertClose(got, expected, atol: 1e-4 * range, "embedding"))
        // The whole path from the clip's samples: SoundWindows pads nothing here (the reference is one window long).
        #expect(SoundWindows(clip: audio.map { $0 / 32768 }, overlap: 0.5).starts == [0])
    }
}
