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
