import Foundation
import MLToolTestSupport
import Testing

/// Sound classification through the command line: a label-folder tree of FSDD recordings (three digits, two
/// speakers) with bad files among them, trained with a fixed windowing (no padding, overlap 0.5: no search), then
/// predict on each bad file with its exact message, on silence, and with --json.
@Suite(.serialized) struct SoundCLITests {
    /// The bad files and the exact message each gives (the file named as given on the command line).
    static func bad(_ dir: String) -> [(name: String, bytes: [UInt8], message: String)] {
        let second = [Int16](repeating: 100, count: 8000)
        return [
            ("cut.wav", WAVBuilder(samples: second, cutAt: 44 + 6000).bytes,
             "\(dir)/cut.wav: truncated WAV: byte 36: the 'data' chunk declares 16000 bytes of samples, the file ends 6000 bytes into them"),
            ("lying.wav", WAVBuilder(samples: second, riffSize: 1_000_036).bytes,
             "\(dir)/lying.wav: WAV header disagrees with the file: byte 4: the RIFF size says 1000036 bytes follow, the file has 16036 after it"),
            ("mp3.wav", WAVBuilder(formatTag: 0x55, samples: second).bytes,
             "\(dir)/mp3.wav: unsupported codec: WAV format tag 0x0055 (MPEG Layer III (MP3)) at byte 20; mltool reads PCM (8, 16, 24, 32 bit) and float WAV, FLAC and Ogg Vorbis"),
            ("ten-hours.wav", WAVBuilder(samples: second, dataSize: 576_000_000).bytes,
             "\(dir)/ten-hours.wav: the header declares 36000.0 s (10 h 0 min), more than the limit of 3600 s; MLTOOL_MAX_AUDIO_SECONDS sets the limit"),
        ]
    }

    /// sounds/{0,1,2}/ with 20 recordings each (jackson and theo, indices 0–9), and the bad files in sounds/0/.
    static func tree(_ dir: TempDir) throws -> String? {
        guard let fsdd = SharedDatasets.fsdd else {
            Oracles.missing("FSDD not found: ../shared/datasets/fsdd or $FSDD_DIR")
            return nil
        }
        let root = dir.file("sounds")
        for digit in ["0", "1", "2"] {
            try FileManager.default.createDirectory(atPath: "\(root)/\(digit)", withIntermediateDirectories: true)
            for speaker in ["jackson", "theo"] {
                for i in 0..<10 {
                    let name = "\(digit)_\(speaker)_\(i).wav"
                    try FileManager.default.copyItem(atPath: "\(fsdd)/recordings/\(name)", toPath: "\(root)/\(digit)/\(name)")
                }
            }
        }
        for b in bad("\(root)/0") { try Data(b.bytes).write(to: URL(fileURLWithPath: "\(root)/0/\(b.name)")) }
        return root
    }

    @Test func trainSkipsAndNamesBadFilesPredictNamesThem() throws {
        guard Tool.available else { return Oracles.missing(Oracles.mltoolBinaryProblem) }
        let dir = try TempDir()
        defer { dir.cleanup() }
        guard let root = try Self.tree(dir) else { return }
        let model = dir.file("digits.bin")
        let common = ["--pad-to", "0", "--overlap", "0.5", "--cache", dir.file("cache"), "--quiet"]
        let t = try Tool.run(["train", root, "-o", model] + common)
        #expect(t.status == 0, "\(t.stderr)")
        for b in Self.bad("\(root)/0") {
            #expect(t.stderr.contains("mltool: warning: skipped: \(b.message)\n"), "\(b.name): \(t.stderr)")
        }
        #expect(t.stdout.hasPrefix("trained 3 classes on "), "\(t.stdout)")
        #expect(t.stdout.contains("  windows    pad to 0.78 s, overlap 0.50\n"), "\(t.stdout)")

        // --strict stops at the first bad file it meets (which one depends on the seeded split).
        let s = try Tool.run(["train", root, "-o", dir.file("strict.bin"), "--strict"] + common)
        #expect(s.status == 65, "\(s.stderr)")
        #expect(Self.bad("\(root)/0").contains { s.stderr.contains("mltool: error: \($0.message)") }, "\(s.stderr)")

        for b in Self.bad("\(root)/0") {
            let p = try Tool.run(["predict", model, "\(root)/0/\(b.name)"])
            #expect(p.status == 65, "\(b.name): \(p.stderr)")
            #expect(p.stderr.contains("mltool: error: \(b.message)\n"), "\(b.name): \(p.stderr)")
        }

        // Silence is no error: a warning says what its windows get.
        try Data(WAVBuilder(samples: [Int16](repeating: 0, count: 8000)).bytes).write(to: URL(fileURLWithPath: dir.file("quiet.wav")))
        let q = try Tool.run(["predict", model, dir.file("quiet.wav")])
        #expect(q.status == 0, "\(q.stderr)")
        #expect(q.stderr.contains("mltool: warning: \(dir.file("quiet.wav")): silent: 8000 samples (1.0 s) all 0; its windows get the embedding of silence"), "\(q.stderr)")

        // --json: the whole clip's labels and one entry per window with its time range (0.75 s clips, one window).
        let j = try Tool.run(["predict", model, "\(root)/1/1_theo_0.wav", "--json", "--top", "1"])
        #expect(j.status == 0, "\(j.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(j.stdout.utf8)) as? [String: Any])
        let top = try #require(object["top"] as? [[String: Any]])
        #expect(top.count == 1 && top[0]["label"] as? String == "1", "\(j.stdout)")
        let windows = try #require(object["windows"] as? [[String: Any]])
        let duration = try #require(object["duration"] as? Double)
        #expect(!windows.isEmpty && windows.first?["start"] as? Double == 0, "\(j.stdout)")
        #expect((windows.last?["end"] as? Double).map { abs($0 - duration) < 1e-9 } == true, "\(j.stdout)")

        // Exports are refused, naming the task (the graph would start at the mel windows, without the front end).
        for format in ["onnx", "coreml", "tflite"] {
            let x = try Tool.run(["export", model, "--to", format, "-o", dir.file("digits.\(format)")])
            #expect(x.status == 65, "\(format): \(x.stderr)")
            #expect(x.stderr == "mltool: error: not yet supported: \(model): exporting a sound classifier (task sound) to \(format)\n", "\(x.stderr)")
        }

        // Quantization goes through the gate on the recorded holdout (10 recordings).
        let q8 = try Tool.run(["quantize", model, "--bits", "8", "-o", dir.file("digits.int8.bin")])
        #expect(q8.status == 0, "\(q8.stderr)")
        #expect(q8.stdout.contains("accuracy on 10 items: float 1.0000, quantized "), "\(q8.stdout)")

        let e = try Tool.run(["eval", model])
        #expect(e.status == 0, "\(e.stderr)")
        // The seeded holdout: 12 of the 64 files, 2 of them bad ones (left out of the recorded holdout).
        #expect(e.stdout.contains("on recorded holdout: 10 items"), "\(e.stdout)")
    }
}
