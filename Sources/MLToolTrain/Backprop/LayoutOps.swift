/// The shape-only layers of a trainable top, forward and backward on NHWC activations: global average pooling,
/// nearest upsampling by an integer factor, and concatenation along channels. (An add's backward hands dy to both
/// inputs unchanged; a dense layer is a 1×1 convolution on (N, 1, 1, C).) Generic: the same loops are the kernel
/// (Float) and the reference (Double).
public enum LayoutOps {
    /// (N, H, W, C) → (N, C): the mean over H·W.
    public static func globalAveragePool<T: BinaryFloatingPoint>(_ x: [T], batch: Int, pixels: Int, channels: Int) throws -> [T] {
        try expect(x.count, batch * pixels * channels, "global average pool input")
        var y = [T](repeating: 0, count: batch * channels)
        for n in 0..<batch {
            for p in 0..<pixels {
                for c in 0..<channels { y[n * channels + c] += x[(n * pixels + p) * channels + c] }
            }
        }
        return y.map { $0 / T(pixels) }
    }

    public static func globalAveragePoolBackward<T: BinaryFloatingPoint>(_ dy: [T], batch: Int, pixels: Int, channels: Int) throws -> [T] {
        try expect(dy.count, batch * channels, "global average pool dy")
        var dx = [T](repeating: 0, count: batch * pixels * channels)
        for n in 0..<batch {
            for p in 0..<pixels {
                for c in 0..<channels { dx[(n * pixels + p) * channels + c] = dy[n * channels + c] / T(pixels) }
            }
        }
        return dx
    }

    /// (N, H, W, C) → (N, H·f, W·f, C), each pixel repeated f × f times.
    public static func upsample<T: BinaryFloatingPoint>(_ x: [T], batch: Int, height: Int, width: Int, channels: Int,
                                                         factor f: Int) throws -> [T] {
        try expect(x.count, batch * height * width * channels, "upsample input")
        var y = [T](repeating: 0, count: x.count * f * f)
        forEachUpsampled(batch, height, width, channels, f) { src, dst in y[dst] = x[src] }
        return y
    }

    /// dx: each input pixel's dy summed over the f × f copies it made.
    public static func upsampleBackward<T: BinaryFloatingPoint>(_ dy: [T], batch: Int, height: Int, width: Int,
                                                                 channels: Int, factor f: Int) throws -> [T] {
        try expect(dy.count, batch * height * width * channels * f * f, "upsample dy")
        var dx = [T](repeating: 0, count: batch * height * width * channels)
        forEachUpsampled(batch, height, width, channels, f) { src, dst in dx[src] += dy[dst] }
        return dx
    }

    /// Inputs (pixels × Cᵢ each) joined along channels into pixels × ΣCᵢ.
    public static func concatChannels<T: BinaryFloatingPoint>(_ xs: [[T]], channels: [Int]) throws -> [T] {
        let total = channels.reduce(0, +)
        guard xs.count == channels.count, let first = xs.first, let c0 = channels.first, c0 > 0 else {
            throw TrainError.shapeMismatch(what: "concat", expected: "one channel count > 0 per input", actual: "\(channels)")
        }
        let pixels = first.count / c0
        var y = [T](repeating: 0, count: pixels * total)
        var offset = 0
        for (x, c) in zip(xs, channels) {
            try expect(x.count, pixels * c, "concat input at channel \(offset)")
            for p in 0..<pixels {
                for k in 0..<c { y[p * total + offset + k] = x[p * c + k] }
            }
            offset += c
        }
        return y
    }

    /// dy split back into each input's channels.
    public static func concatChannelsBackward<T: BinaryFloatingPoint>(_ dy: [T], channels: [Int]) throws -> [[T]] {
        let total = channels.reduce(0, +)
        guard total > 0, dy.count % total == 0 else {
            throw TrainError.shapeMismatch(what: "concat dy", expected: "a multiple of \(total) elements", actual: "\(dy.count)")
        }
        let pixels = dy.count / total
        var offset = 0
        return channels.map { c in
            defer { offset += c }
            return (0..<(pixels * c)).map { i in dy[(i / c) * total + offset + i % c] }
        }
    }

    private static func forEachUpsampled(_ batch: Int, _ height: Int, _ width: Int, _ channels: Int, _ f: Int,
                                         _ body: (Int, Int) -> Void) {
        for n in 0..<batch {
            for oy in 0..<(height * f) {
                for ox in 0..<(width * f) {
                    let src = ((n * height + oy / f) * width + ox / f) * channels
                    let dst = ((n * height * f + oy) * width * f + ox) * channels
                    for c in 0..<channels { body(src + c, dst + c) }
                }
            }
        }
    }

    static func expect(_ actual: Int, _ expected: Int, _ what: String) throws {
        guard actual == expected else {
            throw TrainError.shapeMismatch(what: what, expected: "\(expected) elements", actual: "\(actual)")
        }
    }
}
