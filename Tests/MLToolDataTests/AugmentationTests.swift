import Testing
@testable import MLToolData

@Suite struct AugmentationTests {
    private func image() throws -> RGBImage { try ImageDecoder.decode(path: Fixture.path("resample_src.png")) }
    private func mean(_ img: RGBImage) -> Double { Double(img.pixels.reduce(0) { $0 + Int($1) }) / Double(img.pixels.count) }

    @Test(arguments: Augmentation.allCases)
    func seededSameSizeAndChanged(augmentation: Augmentation) throws {
        let img = try image()
        let a = augmentation.apply(to: img, seed: 11), b = augmentation.apply(to: img, seed: 11)
        #expect(a == b)
        #expect(a.width == img.width && a.height == img.height)
        #expect(a != img)
        if augmentation != .flip { #expect(augmentation.apply(to: img, seed: 12) != a) }
    }

    @Test func flipTwiceIsIdentityAndExposureMovesBrightness() throws {
        let img = try image()
        #expect(Augmentation.flip.apply(to: Augmentation.flip.apply(to: img, seed: 0), seed: 0) == img)
        let means = (0..<8).map { mean(Augmentation.exposure.apply(to: img, seed: UInt64($0))) }
        #expect(means.contains { $0 > mean(img) + 1 } && means.contains { $0 < mean(img) - 1 })
    }

    @Test func rotateKeepsTheCentreAndZeroIsIdentity() throws {
        let img = try image()
        #expect(Augmentation.rotate(img, degrees: 0) == img)
        let r = Augmentation.rotate(img, degrees: 10)
        #expect(r.pixel(x: 30, y: 23) == img.pixel(x: 30, y: 23))
    }

    @Test func blurAndNoiseBehave() throws {
        let flat = RGBImage(width: 9, height: 7, pixels: [UInt8](repeating: 100, count: 189))
        #expect(Augmentation.blur(flat, sigma: 1.2) == flat)
        let img = try image()
        let noisy = Augmentation.noise.apply(to: img, seed: 3)
        #expect(abs(mean(noisy) - mean(img)) < 1.5)
        #expect(throws: DataError.invalidArgument(what: "--augment", value: "zoom",
                                                  expected: "flip, crop, rotate, exposure, blur, noise")) {
            try Augmentation.parseList("flip,zoom")
        }
        #expect(try Augmentation.parseList("flip, noise") == [.flip, .noise])
    }
}
