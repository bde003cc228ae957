extension RGBImage {
    /// The image shrunk (antialiased, aspect ratio kept) so neither side exceeds `maxSide`; smaller images are
    /// returned unchanged, never enlarged.
    public func thumbnail(maxSide: Int) -> RGBImage {
        let longest = max(width, height)
        guard maxSide > 0, longest > maxSide, width > 0, height > 0 else { return self }
        let w = max(1, (width * maxSide + longest / 2) / longest)
        let h = max(1, (height * maxSide + longest / 2) / longest)
        let px = ImageResampler.resize(pixels, width: width, height: height, channels: 3, toWidth: w, toHeight: h)
        return RGBImage(width: w, height: h, pixels: px)
    }
}
