import MLToolCore
import MLToolTestSupport
import Testing
@testable import MLToolAudio

@Suite struct AudioResamplerTests {
    /// scipy's resample_poly (float64) of the real clips: 8 → 16 kHz, 44.1 → 16 kHz, 8 → 22.05 kHz, within 5e-7
    /// absolute on signals of peak ≤ 1 (measured 1.5e-7, 4.5e-8, 1.2e-7: float32 taps, products and sums).
    @Test func matchesScipyResamplePoly() throws {
        guard let manifest = try AudioFixtures.manifest() else { return }
        for entry in manifest.resample {
            let clip = try AudioDecoder.decode(file: AudioFixtures.path(entry.source))
            let r = try AudioResampler(from: entry.down * 1000, to: entry.up * 1000)
            #expect(r.up == entry.up && r.down == entry.down)
            let y = r.resample(clip.samples)
            let expected = try AudioFixtures.floats(entry.file)
            #expect(y.count == expected.count, "\(entry.file)")
            #expect(assertClose(y, expected, atol: 5e-7, entry.file))
        }
    }

    /// The polyphase path gives the defining sum's values within 1e-6 on noise in −1…1 (measured ≤ 3.6e-7
    /// over the five rate pairs: the same products summed in another order).
    @Test(arguments: [(8000, 16000), (44100, 16000), (48000, 16000), (22050, 16000), (16000, 11025)])
    func polyphaseMatchesTheReference(_ rates: (Int, Int)) throws {
        var g = SplitMix64(seed: 7)
        let x = (0..<3001).map { _ in g.nextUnit() * 2 - 1 }
        let r = try AudioResampler(from: rates.0, to: rates.1)
        let fast = r.resample(x), reference = r.resampleReference(x)
        #expect(fast.count == r.outputCount(x.count))
        #expect(assertClose(fast, reference, atol: 1e-6, "\(rates)"))
    }

    @Test func equalRatesGiveTheInput() throws {
        let x: [Float] = [1, -2, 3]
        #expect(try AudioResampler(from: 16000, to: 16000).resample(x) == x)
    }

    @Test func refusesARateOfZero() {
        #expect(throws: AudioError.invalidRate(what: "resampling from", value: 0)) { try AudioResampler(from: 0, to: 16000) }
    }
}
