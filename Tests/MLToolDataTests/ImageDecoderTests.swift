import Foundation
import MLToolTestSupport
import Testing
@testable import MLToolData

/// Quadrant colours of the fixtures: red, green / blue, white (see make_fixtures.py).
private let quad: [(Int, Int, Int)] = [(220, 30, 30), (30, 200, 40), (40, 50, 210), (250, 250, 250)]

/// Checks the centre of each quadrant of a decoded 48×32 upright fixture against `colours` within `tolerance`.
private func expectQuadrants(_ img: RGBImage, _ colours: [(Int, Int, Int)] = quad, tolerance: Int = 8,
                             sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(img.width == 48 && img.height == 32, "size \(img.width)×\(img.height)", sourceLocation: sourceLocation)
    guard img.width == 48, img.height == 32 else { return }
    for (i, (x, y)) in [(12, 8), (36, 8), (12, 24), (36, 24)].enumerated() {
        let p = img.pixel(x: x, y: y)
        let e = colours[i]
        let d = max(abs(Int(p.r) - e.0), abs(Int(p.g) - e.1), abs(Int(p.b) - e.2))
        #expect(d <= tolerance, "quadrant \(i) at (\(x),\(y)): \(p), expected \(e)", sourceLocation: sourceLocation)
    }
}

@Suite struct ImageDecoderTests {
    @Test(arguments: ["quad.png", "quad.jpg", "progressive.jpg", "cmyk.jpg", "rgb16.png", "palette.png",
                       "orient8.png"])
    func colourFixturesDecode(name: String) throws {
        expectQuadrants(try ImageDecoder.decode(path: Fixture.path(name)))
    }

    @Test(arguments: 1...8)
    func exifOrientationIsApplied(orientation: Int) throws {
        expectQuadrants(try ImageDecoder.decode(path: Fixture.path("orient\(orientation).jpg")))
    }

    @Test(arguments: ["gray.jpg", "gray.png"])
    func grayscaleComesOutAsEqualChannels(name: String) throws {
        let img = try ImageDecoder.decode(path: Fixture.path(name))
        // PIL's L = (19595 R + 38470 G + 7471 B + 32768) >> 16
        let grays: [Int] = quad.map { q in (q.0 * 19595 + q.1 * 38470 + q.2 * 7471 + 32768) >> 16 }
        expectQuadrants(img, grays.map { ($0, $0, $0) }, tolerance: 4)
        var equal = true
        for i in stride(from: 0, to: img.pixels.count, by: 3) {
            let p = img.pixels
            if p[i] != p[i + 1] || p[i] != p[i + 2] { equal = false }
        }
        #expect(equal)
    }

    @Test func sixteenBitGrayIsScaledNotLinearised() throws {
        let img = try ImageDecoder.decode(path: Fixture.path("gray16.png"))
        // value v16 = 40·i → 8 bits ≈ v16/257 (sRGB-encoded, so no gamma curve)
        for i in [0, 100, 777, 1535] {
            let expected = Double(40 * i) / 257
            #expect(abs(Double(img.pixels[i * 3]) - expected) <= 1, "pixel \(i): \(img.pixels[i * 3]) vs \(expected)")
        }
    }

    @Test func rgbaIsCompositedOverWhite() throws {
        let img = try ImageDecoder.decode(path: Fixture.path("rgba.png"))
        // Red quadrant fully transparent → white; white quadrant half transparent → white; others opaque.
        expectQuadrants(img, [(255, 255, 255), quad[1], quad[2], (250, 250, 250)], tolerance: 3)
    }

    @Test func emptyFile() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        let path = try dir.file("empty.jpg", [])
        #expect(throws: DataError.emptyFile(file: path)) { try ImageDecoder.decode(path: path) }
        #expect(DataError.emptyFile(file: "a.jpg").description == "a.jpg: empty file (0 bytes)")
    }

    @Test func textFileNamedJPG() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        let path = try dir.file("notes.jpg", text: "these are my notes, not a picture\n")
        #expect(throws: DataError.notAnImage(file: path, head: Array("these ar".utf8))) { try ImageDecoder.decode(path: path) }
        #expect(DataError.notAnImage(file: "notes.jpg", head: Array("these ar".utf8)).description
            == "notes.jpg: not a JPEG or PNG image: byte 0: starts 74 68 65 73 65 20 61 72, neither the PNG signature (89 50 4e 47 0d 0a 1a 0a) nor a JPEG SOI marker (ff d8)")
    }

    @Test func missingFile() {
        #expect(throws: DataError.cannotRead(file: "/nonexistent/x.jpg", reason: "No such file or directory")) {
            try ImageDecoder.decode(path: "/nonexistent/x.jpg")
        }
    }

    @Test func truncatedJPEG() throws {
        let bytes = try Fixture.bytes("quad.jpg")
        // Cut in the middle of the entropy-coded data of the (only) scan.
        let sos = try #require((2..<bytes.count - 1).first { bytes[$0] == 0xFF && bytes[$0 + 1] == 0xDA })
        let cut = Array(bytes[0..<(sos + (bytes.count - sos) / 2)])
        let place = "the file ends at byte \(cut.count), inside the scan that starts at byte \(sos)"
        #expect(throws: DataError.truncatedImage(file: "cut.jpg", format: "JPEG", place: place)) {
            try ImageDecoder.decode(bytes: cut, name: "cut.jpg")
        }
        #expect(DataError.truncatedImage(file: "cut.jpg", format: "JPEG", place: place).description == "cut.jpg: truncated JPEG: \(place)")
        // Cut inside a table segment before the scan: that segment is the place.
        let dht = try #require((2..<sos).first { bytes[$0] == 0xFF && bytes[$0 + 1] == 0xC4 })
        let length = Int(bytes[dht + 2]) << 8 | Int(bytes[dht + 3])
        let inTable = Array(bytes[0..<(dht + 6)])
        #expect(throws: DataError.truncatedImage(file: "cut.jpg", format: "JPEG",
                                                 place: "the file ends at byte \(dht + 6), inside the DHT segment at byte \(dht) (it claims \(length) bytes)")) {
            try ImageDecoder.decode(bytes: inTable, name: "cut.jpg")
        }
    }

    @Test func corruptJPEGHeaderIsNotCalledTruncated() throws {
        var bytes = try Fixture.bytes("quad.jpg")
        let sof = try #require((2..<bytes.count - 1).first { bytes[$0] == 0xFF && bytes[$0 + 1] == 0xC0 })
        bytes[sof + 4] = 7  // sample precision
        let err = #expect(throws: DataError.self) { try ImageDecoder.decode(bytes: bytes, name: "odd.jpg") }
        #expect(err?.description == "odd.jpg: corrupt JPEG: Unsupported JPEG data precision 7 (the SOF0 segment at byte \(sof))")
    }

    @Test func corruptPNG() throws {
        var bytes = try Fixture.bytes("quad.png")
        bytes[bytes.count / 2] ^= 0xFF  // inside IDAT: the CRC no longer matches
        let err = #expect(throws: DataError.self) { try ImageDecoder.decode(bytes: bytes, name: "bad.png") }
        guard case let .corruptImage(file, format, _)? = err else { Issue.record("got \(String(describing: err))"); return }
        #expect(file == "bad.png" && format == "PNG")
        let idat = try #require((8..<bytes.count - 4).first { bytes[$0..<($0 + 4)].elementsEqual("IDAT".utf8) }) - 4
        #expect(err?.description.hasPrefix("bad.png: corrupt PNG: ") == true)
        #expect(err?.description.hasSuffix("(the IDAT chunk at byte \(idat): its CRC does not match)") == true, "\(err?.description ?? "")")
    }

    /// Every proper prefix of a small JPEG and PNG must throw a DataError, never crash or return a partial image.
    /// The one exception: a PNG cut inside its final IEND chunk (12 bytes) still holds every pixel, and libpng's
    /// simplified reader (like PIL) stops after the image data, so it decodes to the full image.
    @Test(arguments: ["quad.jpg", "progressive.jpg", "quad.png", "orient6.jpg", "cmyk.jpg"])
    func everyPrefixThrows(name: String) throws {
        let bytes = try Fixture.bytes(name)
        let full = try ImageDecoder.decode(bytes: bytes, name: name)
        let intactFrom = name.hasSuffix(".png") ? bytes.count - 12 : bytes.count
        for n in 0..<bytes.count {
            do {
                let img = try ImageDecoder.decode(bytes: Array(bytes[0..<n]), name: name)
                #expect(n >= intactFrom && img == full, "\(name): prefix of \(n) bytes decoded")
            } catch is DataError {
            } catch { Issue.record("\(name): prefix \(n): \(error)") }
        }
    }

    @Test func pixelCapIsCheckedBeforeDecoding() throws {
        for name in ["quad.jpg", "quad.png"] {
            #expect(throws: DataError.tooManyPixels(file: Fixture.path(name), width: 48, height: 32, limit: 1000)) {
                try ImageDecoder.decode(path: Fixture.path(name), maxPixels: 1000)
            }
        }
        #expect(DataError.tooManyPixels(file: "big.png", width: 48, height: 32, limit: 1000).description
                == "big.png: 48×32 is 1536 pixels, over the limit of 1000")
    }

    @Test func exifParserIgnoresGarbage() {
        // Cut-off and wrong-typed TIFF structures give no orientation rather than a crash.
        let tiff: [UInt8] = [0x4D, 0x4D, 0, 42, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, 6, 0, 0]
        tiff.withUnsafeBufferPointer { #expect(ImageMetadata.exifOrientation($0) == 6) }
        for n in 0..<tiff.count - 2 {
            Array(tiff[0..<n]).withUnsafeBufferPointer { #expect(ImageMetadata.exifOrientation($0) == nil) }
        }
    }
}
