import Foundation

/// PIL-compatible resizing of 8-bit interleaved images: `Image.resize((w, h), Image.BILINEAR)`.
///
/// A separable triangle filter whose support grows with the shrink factor (so shrinking is antialiased; enlarging
/// is plain bilinear with half-pixel centres), horizontal pass first, each pass rounded to 8 bits with PIL's 22-bit
/// fixed-point coefficients. Same arithmetic as Pillow's `Resample.c`, so results match it exactly.
public enum ImageResampler {
    private static let precisionBits = 22

    /// Per output pixel: first input index, tap count, and `ksize` fixed-point weights.
    struct Coefficients {
        var first: [Int]
        var taps: [Int]
        var weights: [Int32]
        var ksize: Int
    }

    static func coefficients(inSize: Int, outSize: Int) -> Coefficients {
        let scale = Double(inSize) / Double(outSize)
        let filterScale = max(scale, 1)
        let support = filterScale  // the triangle filter's support is 1
        let ksize = Int(support.rounded(.up)) * 2 + 1
        var c = Coefficients(first: [Int](repeating: 0, count: outSize), taps: [Int](repeating: 0, count: outSize),
                             weights: [Int32](repeating: 0, count: outSize * ksize), ksize: ksize)
        var k = [Double](repeating: 0, count: ksize)
        for xx in 0..<outSize {
            let center = (Double(xx) + 0.5) * scale
            let ss = 1.0 / filterScale
            let xmin = max(Int(center - support + 0.5), 0)
            let xmax = min(Int(center + support + 0.5), inSize) - xmin
            var total = 0.0
            for x in 0..<xmax {
                let w = max(0, 1 - abs((Double(x + xmin) - center + 0.5) * ss))
                k[x] = w
                total += w
            }
            for x in 0..<xmax {
                let v = total != 0 ? k[x] / total : k[x]
                let f = v * Double(1 << precisionBits)
                c.weights[xx * ksize + x] = Int32(v < 0 ? (f - 0.5).rounded(.towardZero) : (f + 0.5).rounded(.towardZero))
            }
            c.first[xx] = xmin
            c.taps[xx] = max(xmax, 0)
        }
        return c
    }

    /// `pixels` (height × width × channels, row-major) resized to `newWidth` × `newHeight`.
    public static func resize(_ pixels: [UInt8], width: Int, height: Int, channels: Int,
                              toWidth newWidth: Int, toHeight newHeight: Int) -> [UInt8] {
        precondition(pixels.count == width * height * channels && newWidth > 0 && newHeight > 0)
        var current = pixels
        var w = width
        if newWidth != width {
            current = horizontal(current, width: width, height: height, channels: channels, to: newWidth)
            w = newWidth
        }
        if newHeight != height {
            current = vertical(current, width: w, height: height, channels: channels, to: newHeight)
        }
        return current
    }

    @inline(__always) private static func clip8(_ v: Int) -> UInt8 {
        let s = v >> precisionBits
        return s < 0 ? 0 : s > 255 ? 255 : UInt8(truncatingIfNeeded: s)
    }

    private static func horizontal(_ src: [UInt8], width: Int, height: Int, channels: Int, to outW: Int) -> [UInt8] {
        let c = coefficients(inSize: width, outSize: outW)
        var out = [UInt8](repeating: 0, count: outW * height * channels)
        let half = 1 << (precisionBits - 1)
        src.withUnsafeBufferPointer { s in
            out.withUnsafeMutableBufferPointer { d in
                c.weights.withUnsafeBufferPointer { k in
                    for y in 0..<height {
                        let row = y &* width &* channels
                        for xx in 0..<outW {
                            let x0 = c.first[xx], n = c.taps[xx], kb = xx &* c.ksize
                            for ch in 0..<channels {
                                var acc = half
                                var p = row &+ x0 &* channels &+ ch
                                for t in 0..<n {
                                    acc &+= Int(s[p]) &* Int(k[kb &+ t])
                                    p &+= channels
                                }
                                d[(y &* outW &+ xx) &* channels &+ ch] = clip8(acc)
                            }
                        }
                    }
                }
            }
        }
        return out
    }

    private static func vertical(_ src: [UInt8], width: Int, height: Int, channels: Int, to outH: Int) -> [UInt8] {
        let c = coefficients(inSize: height, outSize: outH)
        let rowLength = width * channels
        var out = [UInt8](repeating: 0, count: rowLength * outH)
        let half = 1 << (precisionBits - 1)
        src.withUnsafeBufferPointer { s in
            out.withUnsafeMutableBufferPointer { d in
                c.weights.withUnsafeBufferPointer { k in
                    for yy in 0..<outH {
                        let y0 = c.first[yy], n = c.taps[yy], kb = yy &* c.ksize
                        for i in 0..<rowLength {
                            var acc = half
                            var p = y0 &* rowLength &+ i
                            for t in 0..<n {
                                acc &+= Int(s[p]) &* Int(k[kb &+ t])
                                p &+= rowLength
                            }
                            d[yy &* rowLength &+ i] = clip8(acc)
                        }
                    }
                }
            }
        }
        return out
    }
}
