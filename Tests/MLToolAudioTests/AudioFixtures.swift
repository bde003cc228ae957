import Foundation
import MLToolTestSupport
import Testing

/// The fixtures `Tests/Fixtures/audio/make_audio.py` writes into .build/audio (or $MLTOOL_AUDIO_FIXTURES): a real
/// FSDD recording in every encoding mltool decodes and a freedesktop Ogg Vorbis sound, with an independent reader's
/// samples, and scipy's resample_poly of them.
enum AudioFixtures {
    struct Decode: Decodable { var file: String; var rate: Int; var channels: Int; var expected: String }
    struct Resample: Decodable { var file: String; var up: Int; var down: Int; var source: String }
    struct Manifest: Decodable { var decode: [Decode]; var resample: [Resample] }

    static let directory: String = ProcessInfo.processInfo.environment["MLTOOL_AUDIO_FIXTURES"]
        ?? SharedDatasets.repository.appendingPathComponent(".build/audio").path

    static func path(_ name: String) -> String { (directory as NSString).appendingPathComponent(name) }

    /// The manifest, or nil after `Oracles.missing` says why.
    static func manifest(sourceLocation: SourceLocation = #_sourceLocation) throws -> Manifest? {
        let p = path("manifest.json")
        guard FileManager.default.fileExists(atPath: p) else {
            Oracles.missing("no \(p) (python3 Tests/Fixtures/audio/make_audio.py; needs pip soundfile, scipy and FSDD)",
                            sourceLocation: sourceLocation)
            return nil
        }
        return try JSONDecoder().decode(Manifest.self, from: Data(contentsOf: URL(fileURLWithPath: p)))
    }

    /// A raw little-endian float32 file.
    static func floats(_ name: String) throws -> [Float] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path(name)))
        return data.withUnsafeBytes { raw in (0..<data.count / 4).map { raw.loadUnaligned(fromByteOffset: $0 * 4, as: Float.self) } }
    }
}

/// A WAV file built byte by byte: RIFF header, a 16-byte 'fmt ' chunk, a 'data' chunk (sizes as given, so a test can
/// make them lie).
struct WAVBuilder {
    var formatTag: UInt16 = 1
    var channels: UInt16 = 1
    var rate: UInt32 = 8000
    var bits: UInt16 = 16
    var samples: [Int16] = []
    var riffSize: UInt32?
    var dataSize: UInt32?
    var cutAt: Int?

    var bytes: [UInt8] {
        var b = [UInt8]()
        func u16(_ v: UInt16) { b += [UInt8(v & 0xff), UInt8(v >> 8)] }
        func u32(_ v: UInt32) { u16(UInt16(v & 0xffff)); u16(UInt16(v >> 16)) }
        let block = channels * bits / 8
        let data = UInt32(samples.count * 2)
        b += Array("RIFF".utf8); u32(riffSize ?? 36 + data); b += Array("WAVE".utf8)
        b += Array("fmt ".utf8); u32(16); u16(formatTag); u16(channels); u32(rate); u32(rate * UInt32(block)); u16(block); u16(bits)
        b += Array("data".utf8); u32(dataSize ?? data)
        for s in samples { u16(UInt16(bitPattern: s)) }
        return cutAt.map { Array(b.prefix($0)) } ?? b
    }
}
