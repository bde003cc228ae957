import MLToolCore
import MLToolData
import Testing

@Suite struct PNGEncoderTests {
    @Test(arguments: [(1, 1), (7, 3), (96, 62), (301, 17)])
    func roundTripsThroughTheDecoder(size: (Int, Int)) throws {
        var rng = SplitMix64(seed: UInt64(size.0 * 1000 + size.1))
        let px = (0..<(size.0 * size.1 * 3)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        let image = RGBImage(width: size.0, height: size.1, pixels: px)
        let png = try PNGEncoder.encode(image)
        #expect(Array(png.prefix(8)) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        #expect(try ImageDecoder.decode(bytes: png, name: "round trip") == image)
    }

    @Test func emptyImageIsAnError() {
        #expect(throws: DataError.self) { try PNGEncoder.encode(RGBImage(width: 0, height: 0, pixels: [])) }
    }

    @Test func thumbnailsShrinkKeepingAspectAndNeverEnlarge() {
        let wide = ReportFixture.image(width: 300, height: 150).thumbnail(maxSide: 96)
        #expect(wide.width == 96 && wide.height == 48)
        let tall = ReportFixture.image(width: 50, height: 400).thumbnail(maxSide: 96)
        #expect(tall.width == 12 && tall.height == 96)
        let small = ReportFixture.image(width: 28, height: 28)
        #expect(small.thumbnail(maxSide: 96) == small)
        // Antialiased: the thumbnail's mean colour stays close to the original's.
        func mean(_ i: RGBImage) -> Double { Double(i.pixels.reduce(0) { $0 + Int($1) }) / Double(i.pixels.count) }
        let big = ReportFixture.image(width: 400, height: 400)
        #expect(abs(mean(big) - mean(big.thumbnail(maxSide: 96))) < 2)
    }
}
