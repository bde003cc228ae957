import MLToolCore

extension MelSpectrogram {
    /// `clip` at 16 kHz cut into windows (`SoundWindows`), and each window's 76 × 32 embedding input as one batch
    /// (windows, 76, 32, 1): what the speech embedding, or a sound classifier's graph that starts with it, runs on.
    public func windowBatch(_ clip: AudioClip, overlap: Double, minimumSamples: Int = SoundWindows.samples) throws
        -> (layout: SoundWindows.Layout, batch: Tensor) {
        let samples = try AudioResampler(from: clip.sampleRate, to: MelSpectrogram.sampleRate).resample(clip.samples)
        let windows = SoundWindows(clip: samples, overlap: overlap, minimumSamples: minimumSamples)
        let frames = embeddingInput(windows.samples)
        let size = SoundWindows.frames * MelSpectrogram.bands
        var batch = [Float]()
        batch.reserveCapacity(windows.starts.count * size)
        for s in windows.starts { batch += frames[(s * MelSpectrogram.bands)..<(s * MelSpectrogram.bands + size)] }
        return (windows.layout(clipSamples: samples.count),
                Tensor(shape: [windows.starts.count, SoundWindows.frames, MelSpectrogram.bands, 1], data: batch))
    }
}
