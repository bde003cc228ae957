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

    /// A rectangle of the resized image (its own coordinates): resizing to it gives exactly those pixels of the full
    /// resize, computing no others (a centre crop costs only what it keeps).
    public struct Window: Equatable, Sendable {
        public var x: Int, y: Int, width: Int, height: Int
        public init(x: Int, y: Int, width: Int, height: Int) { (self.x, self.y, self.width, self.height) = (x, y, width, height) }
    }

    /// `pixels` (height × width × channels, row-major) resized to `newWidth` × `newHeight`; with `window`, only that
    /// part of the result (`window.width` × `window.height`), identical to cropping the full result.
    public static func resize(_ pixels: [UInt8], width: Int, height: Int, channels: Int,
                              toWidth newWidth: Int, toHeight newHeight: Int, window: Window? = nil) -> [UInt8] {
        let win = window ?? Window(x: 0, y: 0, width: newWidth, height: newHeight)
        precondition(pixels.count == width * height * channels && newWidth > 0 && newHeight > 0 && channels > 0
                     && win.x >= 0 && win.y >= 0 && win.width > 0 && win.height > 0
                     && win.x + win.width <= newWidth && win.y + win.height <= newHeight)
        let outRows = win.y..<(win.y + win.height), outColumns = win.x..<(win.x + win.width)
        // Horizontal pass over the input rows the vertical pass reads (the output rows when the height is kept).
        let cv = newHeight != height ? coefficients(inSize: height, outSize: newHeight) : nil
        var rows = outRows
        if let cv {
            let lo = outRows.map { cv.first[$0] }.min() ?? 0
            let hi = outRows.map { cv.first[$0] + cv.taps[$0] }.max() ?? lo
            rows = lo..<max(hi, lo + 1)
        }
        let across = newWidth != width
            ? horizontal(pixels, width: width, rows: rows, channels: channels,
                         coefficients: coefficients(inSize: width, outSize: newWidth), columns: outColumns)
            : copyWindow(pixels, width: width, rows: rows, channels: channels, columns: outColumns)
        guard let cv else { return across }
        return vertical(across, width: win.width, firstRow: rows.lowerBound, channels: channels, coefficients: cv,
                        outRows: outRows)
    }

    /// Rows `rows` and columns `columns` of an interleaved image, copied.
    private static func copyWindow(_ src: [UInt8], width: Int, rows: Range<Int>, channels: Int, columns: Range<Int>) -> [UInt8] {
        if rows.count * width * channels == src.count && columns.count == width { return src }
        let rowBytes = columns.count * channels
        var out = [UInt8](repeating: 0, count: rows.count * rowBytes)
        src.withUnsafeBufferPointer { s in
            out.withUnsafeMutableBufferPointer { d in
                guard let sb = s.baseAddress, let db = d.baseAddress else { return }
                for (i, y) in rows.enumerated() {
                    (db + i * rowBytes).update(from: sb + (y * width + columns.lowerBound) * channels, count: rowBytes)
                }
            }
        }
        return out
    }

    // The passes below check their bounds once (the coefficients index inside the input by construction:
    // first + taps ≤ inSize), then run on raw pointers with wrapping arithmetic. Sums are Int32, as in Pillow:
    // 255 · 2^22 plus rounding stays below 2^31.

    /// Horizontal pass: output columns `columns` of input rows `rows`.
    private static func horizontal(_ src: [UInt8], width: Int, rows: Range<Int>, channels: Int, coefficients c: Coefficients,
                                   columns: Range<Int>) -> [UInt8] {
        let outW = columns.count
        var out = [UInt8](repeating: 0, count: outW * rows.count * channels)
        let half = Int32(1 << (precisionBits - 1))
        src.withUnsafeBufferPointer { s in
            out.withUnsafeMutableBufferPointer { d in
                c.weights.withUnsafeBufferPointer { k in
                    c.first.withUnsafeBufferPointer { first in
                        c.taps.withUnsafeBufferPointer { taps in
                            guard let s = s.baseAddress, let d = d.baseAddress, let k = k.baseAddress,
                                  let first = first.baseAddress, let taps = taps.baseAddress else { return }
                            for (i, y) in rows.enumerated() {
                                let row = s + y &* width &* channels
                                var o = d + i &* outW &* channels
                                for xx in columns {
                                    let n = taps[xx], w = k + xx &* c.ksize
                                    var p = row + first[xx] &* channels
                                    if channels == 3 {
                                        var a0 = half, a1 = half, a2 = half
                                        for t in 0..<n {
                                            let wt = w[t]
                                            a0 &+= Int32(p[0]) &* wt
                                            a1 &+= Int32(p[1]) &* wt
                                            a2 &+= Int32(p[2]) &* wt
                                            p += 3
                                        }
                                        o[0] = clip8(a0); o[1] = clip8(a1); o[2] = clip8(a2)
                                        o += 3
                                    } else {
                                        for ch in 0..<channels {
                                            var a = half
                                            for t in 0..<n { a &+= Int32(p[t &* channels &+ ch]) &* w[t] }
                                            o[ch] = clip8(a)
                                        }
                                        o += channels
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        return out
    }

    /// Vertical pass: output rows `outRows` from `src`, whose first row is input row `firstRow`. Each output row is
    /// a weighted sum of whole input rows, accumulated tap by tap along the row (a loop the compiler vectorizes).
    private static func vertical(_ src: [UInt8], width: Int, firstRow: Int, channels: Int, coefficients c: Coefficients,
                                 outRows: Range<Int>) -> [UInt8] {
        let rowLength = width * channels
        var out = [UInt8](repeating: 0, count: rowLength * outRows.count)
        var acc = [Int32](repeating: 0, count: rowLength)
        let half = Int32(1 << (precisionBits - 1))
        src.withUnsafeBufferPointer { s in
            out.withUnsafeMutableBufferPointer { d in
                acc.withUnsafeMutableBufferPointer { a in
                    guard let s = s.baseAddress, let d = d.baseAddress, let a = a.baseAddress else { return }
                    for (i, yy) in outRows.enumerated() {
                        let y0 = c.first[yy] - firstRow, n = c.taps[yy], kb = yy * c.ksize
                        for j in 0..<rowLength { a[j] = half }
                        for t in 0..<n {
                            let wt = c.weights[kb + t], r = s + (y0 + t) &* rowLength
                            for j in 0..<rowLength { a[j] &+= Int32(r[j]) &* wt }
                        }
                        let o = d + i &* rowLength
                        for j in 0..<rowLength { o[j] = clip8(a[j]) }
                    }
                }
            }
        }
        return out
    }

    @inline(__always) private static func clip8(_ v: Int32) -> UInt8 {
        let s = v >> Int32(precisionBits)
        return s < 0 ? 0 : s > 255 ? 255 : UInt8(truncatingIfNeeded: s)
    }
}

/// The plain definition of the resize (two full passes, one output value at a time, Int sums), kept as the
/// reference the fast passes above are tested against.
enum ImageResamplerReference {
    static func resize(_ pixels: [UInt8], width: Int, height: Int, channels: Int, toWidth newWidth: Int,
                       toHeight newHeight: Int) -> [UInt8] {
        var current = pixels
        var w = width
        if newWidth != width {
            let c = ImageResampler.coefficients(inSize: width, outSize: newWidth)
            var out = [UInt8](repeating: 0, count: newWidth * height * channels)
            for y in 0..<height {
                for xx in 0..<newWidth {
                    for ch in 0..<channels {
                        var acc = 1 << 21
                        for t in 0..<c.taps[xx] {
                            acc += Int(current[(y * width + c.first[xx] + t) * channels + ch]) * Int(c.weights[xx * c.ksize + t])
                        }
                        out[(y * newWidth + xx) * channels + ch] = clip(acc)
                    }
                }
            }
            current = out
            w = newWidth
        }
        if newHeight != height {
            let c = ImageResampler.coefficients(inSize: height, outSize: newHeight)
            let rowLength = w * channels
            var out = [UInt8](repeating: 0, count: rowLength * newHeight)
            for yy in 0..<newHeight {
                for i in 0..<rowLength {
                    var acc = 1 << 21
                    for t in 0..<c.taps[yy] { acc += Int(current[(c.first[yy] + t) * rowLength + i]) * Int(c.weights[yy * c.ksize + t]) }
                    out[yy * rowLength + i] = clip(acc)
                }
            }
            current = out
        }
        return current
    }

    private static func clip(_ v: Int) -> UInt8 { UInt8(max(0, min(255, v >> 22))) }
}
