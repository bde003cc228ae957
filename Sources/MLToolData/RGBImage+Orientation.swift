extension RGBImage {
    /// The image as it should be displayed given EXIF `orientation` (1…8): 2 mirror, 3 rotate 180°, 4 flip,
    /// 5 transpose, 6 rotate 90° clockwise, 7 transverse, 8 rotate 90° counter-clockwise.
    public func oriented(_ orientation: Int) -> RGBImage {
        guard (2...8).contains(orientation) else { return self }
        let w = width, h = height
        let swap = orientation >= 5
        let ow = swap ? h : w, oh = swap ? w : h
        var out = [UInt8](repeating: 0, count: pixels.count)
        pixels.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                for oy in 0..<oh {
                    for ox in 0..<ow {
                        let sx: Int, sy: Int
                        switch orientation {
                        case 2: sx = w - 1 - ox; sy = oy
                        case 3: sx = w - 1 - ox; sy = h - 1 - oy
                        case 4: sx = ox; sy = h - 1 - oy
                        case 5: sx = oy; sy = ox
                        case 6: sx = oy; sy = h - 1 - ox
                        case 7: sx = w - 1 - oy; sy = h - 1 - ox
                        default: sx = w - 1 - oy; sy = ox  // 8
                        }
                        let s = (sy &* w &+ sx) &* 3, d = (oy &* ow &+ ox) &* 3
                        dst[d] = src[s]; dst[d &+ 1] = src[s &+ 1]; dst[d &+ 2] = src[s &+ 2]
                    }
                }
            }
        }
        return RGBImage(width: ow, height: oh, pixels: out)
    }
}
