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

    /// The fast passes (windowed, Int32, raw pointers) against the plain reference: every window of a resize is
    /// bit for bit that part of the reference's full result, enlarging and shrinking, 1, 3 and 4 channels.
    @Test(arguments: [1, 3, 4])
    func windowedResizeIsTheReferenceCropped(channels: Int) throws {
        let photo = try ImageDecoder.decode(path: Fixture.path("resample_src.png"))   // 61 × 47
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        let noise = (0..<(photo.width * photo.height * channels)).map { _ -> UInt8 in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return UInt8(truncatingIfNeeded: state >> 56)
        }
        let gray = stride(from: 0, to: photo.pixels.count, by: 3).map { photo.pixels[$0] }
        var rgba = [UInt8]()
        for i in 0..<(photo.width * photo.height) {
            rgba += photo.pixels[(i * 3)..<(i * 3 + 3)]
            rgba.append(noise[i])
        }
        let sources = [channels == 3 ? photo.pixels : channels == 1 ? gray : rgba, noise]
        let sizes = [(61, 47), (224, 256), (256, 199), (17, 13), (61, 20), (30, 47), (5, 3), (400, 9)]
        for (index, src) in sources.enumerated() {
            for (w, h) in sizes {
                let full = ImageResamplerReference.resize(src, width: 61, height: 47, channels: channels, toWidth: w, toHeight: h)
                #expect(ImageResampler.resize(src, width: 61, height: 47, channels: channels, toWidth: w, toHeight: h) == full,
                        "source \(index), \(channels) channels, to \(w)×\(h)")
                let cw: Int = w * 7 / 8 + 1, ch: Int = h * 7 / 8 + 1
                let centre = ImageResampler.Window(x: (w - cw) / 2, y: (h - ch) / 2, width: cw, height: ch)
                let lastColumn = ImageResampler.Window(x: w - 1, y: 0, width: 1, height: h)
                let lowerHalf = ImageResampler.Window(x: 0, y: h / 2, width: w, height: h - h / 2)
                for win in [centre, lastColumn, lowerHalf] where win.x + win.width <= w && win.y + win.height <= h {
                    let got = ImageResampler.resize(src, width: 61, height: 47, channels: channels, toWidth: w, toHeight: h, window: win)
                    var expected = [UInt8]()
                    for y in win.y..<(win.y + win.height) {
                        expected += full[((y * w + win.x) * channels)..<((y * w + win.x + win.width) * channels)]
                    }
                    #expect(got == expected, "source \(index), \(channels) channels, to \(w)×\(h), window \(win)")
                }
            }
        }
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

    /// Letterbox placement by docs/FORMAT.md's rule, value by value: an 8×4 and a 4×8 photo (r = 1, no resize) on an
    /// 8×8 canvas at top 2 / left 2, every other value the pad; RGB and BGR.
    @Test(arguments: [(8, 4), (4, 8), (8, 8)], ["rgb", "bgr"])
    func letterboxPlacesThePhotoAndPadsTheRest(size: (Int, Int), order: String) throws {
        let (w, h) = size
        let pre = try ImagePreprocessor(.init(height: 8, width: 8, colorOrder: order, resize: "letterbox", crop: "none", padValue: 114))
        var random = SplitMix64(seed: UInt64(w * 10 + h))
        let image = RGBImage(width: w, height: h, pixels: (0..<(w * h * 3)).map { _ in UInt8(truncatingIfNeeded: random.next()) })
        let out = try pre.process(image)
        let left = (8 - w) / 2, top = (8 - h) / 2
        var expected = [Float](repeating: 114, count: 8 * 8 * 3)
        for y in 0..<h {
            for x in 0..<w {
                for c in 0..<3 { expected[((y + top) * 8 + x + left) * 3 + c] = Float(image.pixels[(y * w + x) * 3 + (order == "bgr" ? 2 - c : c)]) }
            }
        }
        #expect(out == expected)
    }

    /// The batch runs on every core: each of 17 letterboxed photos of other sizes lands in its own slice exactly as
    /// `process` writes it alone; of two bad photos in a batch, the first one's error is the one thrown.
    @Test func parallelBatchEqualsOneByOneAndNamesTheFirstBadImage() throws {
        let pre = try ImagePreprocessor(.init(height: 32, width: 32, scale: 1 / 255, resize: "letterbox", crop: "none", padValue: 114))
        var random = SplitMix64(seed: 7)
        let images = (0..<17).map { i in
            let w = 20 + 7 * i, h = 50 - 2 * i
            return RGBImage(width: w, height: h, pixels: (0..<(w * h * 3)).map { _ in UInt8(truncatingIfNeeded: random.next()) })
        }
        var batch = [Float](repeating: .nan, count: images.count * pre.elementCount)
        try batch.withUnsafeMutableBufferPointer { try pre.processBatch(images, into: $0) }
        #expect(batch == (try images.flatMap { try pre.process($0) }))

        let cropping = try ImagePreprocessor(.efficientNetLite)
        let strip = { (h: Int) in RGBImage(width: 1, height: h, pixels: [UInt8](repeating: 0, count: 3 * h)) }
        var out = [Float](repeating: 0, count: 5 * cropping.elementCount)
        #expect(throws: DataError.invalidPreprocessing(what: "a 1×3000 image is too elongated (it would resize to 256×768000)")) {
            try out.withUnsafeMutableBufferPointer { try cropping.processBatch(Array(images[0..<3]) + [strip(3000), strip(4000)], into: $0) }
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
