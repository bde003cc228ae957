import MLToolCore
import MLToolTestSupport
import Testing
@testable import MLToolData

/// PIL's BILINEAR resize is replicated arithmetic for arithmetic (Pillow's 22-bit fixed-point coefficients, 8-bit
/// rounding after each pass), so the results should be identical; the tolerance of 1/255 only allows for a libm
/// difference in a coefficient landing on a rounding boundary (measured: 0 on every fixture).
private let pilTolerance = 1.0

@Suite struct ImagePreprocessorTests {
    @Test(arguments: [(23, 17), (97, 83), (30, 60), (61, 20)])
    func resizeMatchesPIL(size: (Int, Int)) throws {
        let src = try ImageDecoder.decode(path: Fixture.path("resample_src.png"))
        let expected = try ImageDecoder.decode(path: Fixture.path("resample_\(size.0)x\(size.1).png"))
        let got = ImageResampler.resize(src.pixels, width: src.width, height: src.height, channels: 3,
                                        toWidth: size.0, toHeight: size.1)
        assertClose(got.map(Float.init), expected.pixels.map(Float.init), atol: pilTolerance, "resize to \(size)")
    }

    @Test func shorterSideThenCentreCropMatchesPILReference() throws {
        let src = try ImageDecoder.decode(path: Fixture.path("resample_src.png"))
        let expected = try ImageDecoder.decode(path: Fixture.path("pipeline_28.png"))
        let pre = try ImagePreprocessor(ImagePreprocessing(height: 28, width: 28, resize: "shorter", resizeTo: 32,
                                                           crop: "center"))
        #expect(pre.resizedSize(width: 61, height: 47) == (42, 32))
        let out = try pre.process(src)
        #expect(out.count == 28 * 28 * 3)
        assertClose(out, expected.pixels.map(Float.init), atol: pilTolerance, "shorter side, centre crop")
    }

    @Test func grayMatchesPILConvertL() throws {
        let src = try ImageDecoder.decode(path: Fixture.path("resample_src.png"))
        let expected = try ImageDecoder.decode(path: Fixture.path("pipeline_gray_20x15.png"))
        let pre = try ImagePreprocessor(ImagePreprocessing(height: 15, width: 20, colorOrder: "gray", bias: [0],
                                                           mean: [0], std: [1]))
        let out = try pre.process(src)
        let expectedGray = stride(from: 0, to: expected.pixels.count, by: 3).map { expected.pixels[$0] }
        assertClose(out, expectedGray.map(Float.init), atol: pilTolerance, "gray")
    }

    @Test func normalisationAndChannelOrder() throws {
        let img = RGBImage(width: 1, height: 1, pixels: [255, 0, 51])
        let rgb = try ImagePreprocessor(.init(height: 1, width: 1, scale: 1.0 / 255, mean: [0.5, 0.5, 0.5],
                                              std: [0.5, 0.25, 0.5]))
        let v = try rgb.process(img)
        #expect(v.count == 3)
        #expect(abs(v[0] - 1) < 1e-6 && abs(v[1] + 2) < 1e-6 && abs(v[2] + 0.6) < 1e-6)
        let bgr = try ImagePreprocessor(.init(height: 1, width: 1, colorOrder: "bgr"))
        #expect(try bgr.process(img) == [51, 0, 255])
        let lite = try ImagePreprocessor(.efficientNetLite)
        #expect(lite.elementCount == 224 * 224 * 3)
        let expected: [Float] = [1, -1, 51 / 127.5 - 1]
        let out = try lite.process(img)
        #expect(out.indices.allSatisfy { abs(out[$0] - expected[$0 % 3]) < 1e-6 })
    }

    @Test func batchWritesImagesBackToBack() throws {
        let pre = try ImagePreprocessor(.init(height: 2, width: 2))
        let a = RGBImage(width: 4, height: 4, pixels: [UInt8](repeating: 10, count: 48))
        let b = RGBImage(width: 3, height: 5, pixels: [UInt8](repeating: 20, count: 45))
        var buffer = [Float](repeating: -1, count: 25)
        try buffer.withUnsafeMutableBufferPointer { try pre.processBatch([a, b], into: $0) }
        #expect(buffer[0..<12].allSatisfy { $0 == 10 } && buffer[12..<24].allSatisfy { $0 == 20 } && buffer[24] == -1)
        var small = [Float](repeating: 0, count: 23)
        #expect(throws: DataError.self) {
            try small.withUnsafeMutableBufferPointer { try pre.processBatch([a, b], into: $0) }
        }
    }

    @Test func invalidConfigurationsAreNamed() {
        #expect(throws: DataError.invalidPreprocessing(what: "colour order 'rgba', expected rgb, bgr or gray")) {
            try ImagePreprocessor(.init(height: 2, width: 2, colorOrder: "rgba"))
        }
        #expect(throws: DataError.invalidPreprocessing(what: "std [1.0, 0.0, 1.0] has a zero")) {
            try ImagePreprocessor(.init(height: 2, width: 2, std: [1, 0, 1]))
        }
        let strip = RGBImage(width: 1, height: 3000, pixels: [UInt8](repeating: 0, count: 9000))
        #expect(throws: DataError.invalidPreprocessing(
            what: "a 1×3000 image is too elongated (it would resize to 256×768000)")) {
            try ImagePreprocessor(.efficientNetLite).process(strip)
        }
        #expect(throws: DataError.self) {  // shorter side to 10 cannot be cropped to 20 × 20
            try ImagePreprocessor(.init(height: 20, width: 20, resize: "shorter", resizeTo: 10, crop: "center"))
                .process(RGBImage(width: 30, height: 30, pixels: [UInt8](repeating: 0, count: 2700)))
        }
    }
}
