import Foundation
import MLToolCore

/// PNG files built in code for tests: a noisy solid colour, and the pieces (big-endian words, CRC-checked chunks)
/// that tests assembling hostile files use.
public enum TestPNG {
    /// A solid-colour RGB PNG (stored, uncompressed deflate) with a little seeded noise.
    public static func solid(width: Int, height: Int, rgb: (UInt8, UInt8, UInt8), noiseSeed: UInt64) -> [UInt8] {
        var rng = SplitMix64(seed: noiseSeed)
        var raw = [UInt8]()
        for _ in 0..<height {
            raw.append(0)  // filter: none
            for _ in 0..<width {
                for c in [rgb.0, rgb.1, rgb.2] {
                    raw.append(UInt8(clamping: Int(c) + Int(rng.next() % 31) - 15))
                }
            }
        }
        var z: [UInt8] = [0x78, 0x01]
        var offset = 0
        while offset < raw.count || offset == 0 {
            let n = min(65535, raw.count - offset)
            let final: UInt8 = offset + n >= raw.count ? 1 : 0
            z += [final, UInt8(n & 0xff), UInt8(n >> 8), UInt8(~n & 0xff), UInt8((~n >> 8) & 0xff)]
            z += raw[offset..<(offset + n)]
            offset += n
            if n == 0 { break }
        }
        var a: UInt32 = 1, b: UInt32 = 0
        for v in raw { a = (a + UInt32(v)) % 65521; b = (b + a) % 65521 }
        z += be32(b << 16 | a)
        var out: [UInt8] = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]
        out += chunk("IHDR", be32(UInt32(width)) + be32(UInt32(height)) + [8, 2, 0, 0, 0])
        out += chunk("IDAT", z)
        out += chunk("IEND", [])
        return out
    }

    public static func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8((v >> 16) & 0xff), UInt8((v >> 8) & 0xff), UInt8(v & 0xff)] }

    public static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let body = Array(type.utf8) + data
        var crc: UInt32 = 0xffff_ffff
        for byte in body {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xedb8_8320 : crc >> 1 }
        }
        return be32(UInt32(data.count)) + body + be32(~crc)
    }

    /// Twelve photos with one box each and their annotations.json (a detector trainer's input, not a data set whose
    /// accuracy anything claims).
    public static func boxedPhotos(in folder: String) throws {
        var entries: [String] = []
        for i in 0..<12 {
            try Data(solid(width: 64, height: 48, rgb: (UInt8(40 + 15 * i), 20, 200), noiseSeed: UInt64(i)))
                .write(to: URL(fileURLWithPath: folder + "/p\(i).png"))
            entries.append(#"{"image": "p\#(i).png", "annotations": [{"label": "\#(i % 2 == 0 ? "a" : "b")", "coordinates": {"x": 30, "y": 24, "width": 20, "height": 16}}]}"#)
        }
        try Data(("[" + entries.joined(separator: ",") + "]").utf8).write(to: URL(fileURLWithPath: folder + "/annotations.json"))
    }
}
