import Foundation
import MLToolCore

/// The settings of a `resize` step (ONNX Resize on the two spatial axes of an NHWC tensor), validated once.
///
/// Along each axis, output index y maps to the input coordinate x = transform(y) (the coordinate mode); with
/// r = x − ⌊x⌋ taken in (0, 1] (1 when x is an integer), the n taps are ⌊x⌋' − n/2 + 1 + k (k < n, ⌊x⌋' = x − r)
/// with coefficients from r: nearest [r ≤ ½, r > ½] (by rounding mode), linear [1 − r, r], cubic Keys with a, and
/// the antialias variants (a triangle or cubic kernel stretched by 1/scale when downsampling). Taps outside the
/// input read the edge value; with excludeOutside their coefficients are 0 and the rest renormalised. This is the
/// ONNX reference implementation's definition (onnx/reference/ops/op_resize.py), tap window included.
struct ResizeSpec: Sendable, Equatable {
    enum Mode: String, Sendable { case nearest, linear, cubic }
    enum Coordinate: String, Sendable {
        case halfPixel = "half_pixel", halfPixelSymmetric = "half_pixel_symmetric"
        case pytorchHalfPixel = "pytorch_half_pixel", alignCorners = "align_corners", asymmetric
        case tfHalfPixelForNN = "tf_half_pixel_for_nn"
    }
    enum Rounding: String, Sendable {
        case roundPreferFloor = "round_prefer_floor", roundPreferCeil = "round_prefer_ceil", floor, ceil
    }

    var mode: Mode
    var coordinate: Coordinate
    var rounding: Rounding
    /// Output height and width (empty in a program until a plan resolves them from the scales).
    var size: [Int]
    /// The factors the coordinate transform divides by (h, w); nil: output / input size.
    var scales: [Double]?
    var cubicA: Double
    var excludeOutside: Bool
    var antialias: Bool

    init(mode: Mode, coordinate: Coordinate, rounding: Rounding = .roundPreferFloor, size: [Int], scales: [Double]? = nil,
         cubicA: Double = -0.75, excludeOutside: Bool = false, antialias: Bool = false) {
        self.mode = mode; self.coordinate = coordinate; self.rounding = rounding; self.size = size; self.scales = scales
        self.cubicA = cubicA; self.excludeOutside = excludeOutside; self.antialias = antialias
    }

    init(_ node: Node) throws {
        let a = node.attributes
        func bad(_ attr: String, _ expected: String, _ actual: String) -> EngineError {
            .invalidAttribute(node: node.name, attribute: attr, expected: expected, actual: actual)
        }
        guard let m = Mode(rawValue: a.mode ?? "nearest") else { throw bad("mode", "nearest, linear or cubic", a.mode ?? "") }
        guard let c = Coordinate(rawValue: a.coordinateMode ?? "half_pixel") else {
            throw bad("coordinateMode", "half_pixel, half_pixel_symmetric, pytorch_half_pixel, align_corners, asymmetric or tf_half_pixel_for_nn",
                      a.coordinateMode ?? "")
        }
        guard let r = Rounding(rawValue: a.nearestMode ?? "round_prefer_floor") else {
            throw bad("nearestMode", "round_prefer_floor, round_prefer_ceil, floor or ceil", a.nearestMode ?? "")
        }
        // No shape with scales: the size follows from the input's (⌊n · scale⌋, `Program.resolve`); empty until then.
        let size = a.shape ?? (a.scales != nil ? [] : [-1])
        guard size.isEmpty || size.count == 2 && size.allSatisfy({ $0 >= 0 && $0 <= Program.maxExtent }) else {
            throw bad("shape", "the output height and width (2 values in 0…\(Program.maxExtent)), or scales", "\(a.shape ?? [])")
        }
        if let s = a.scales, s.count != 2 || !s.allSatisfy({ $0.isFinite && $0 > 0 }) {
            throw bad("scales", "2 finite values > 0", "\(s)")
        }
        let alpha = Double(a.alpha ?? -0.75)
        guard alpha.isFinite else { throw bad("alpha", "a finite cubic coefficient", "\(alpha)") }
        if a.antialias == true && m == .nearest { throw bad("antialias", "false for mode nearest", "true") }
        self.init(mode: m, coordinate: c, rounding: r, size: size, scales: a.scales.map { $0.map(Double.init) }, cubicA: alpha,
                  excludeOutside: a.excludeOutside ?? false, antialias: a.antialias ?? false)
    }

    /// The scale of axis `i` (0: height, 1: width) for an input of `inSize`.
    func scale(_ i: Int, inSize: Int) -> Double {
        scales?[i] ?? Double(size[i]) / Double(inSize)
    }

    /// The input coordinate output index `y` maps to.
    func original(_ y: Int, scale: Double, inSize: Int, outSize: Int) -> Double {
        let yd = Double(y), outFloat = scale * Double(inSize)
        switch coordinate {
        case .alignCorners: return outFloat == 1 ? 0 : yd * Double(inSize - 1) / (outFloat - 1)
        case .asymmetric: return yd / scale
        case .pytorchHalfPixel: return outFloat == 1 ? -0.5 : (yd + 0.5) / scale - 0.5
        case .halfPixel: return (yd + 0.5) / scale - 0.5
        case .tfHalfPixelForNN: return (yd + 0.5) / scale
        case .halfPixelSymmetric:
            let adjustment = Double(outSize) / outFloat
            let offset = Double(inSize) / 2 * (1 - adjustment)
            return offset + (yd + 0.5) / scale - 0.5
        }
    }

    /// The coefficients for ratio `r` in (0, 1]; their count is the number of taps.
    func coefficients(_ r: Double, scale: Double) -> [Double] {
        switch mode {
        case .nearest:
            if r == 1 { return [0, 1] }
            switch rounding {
            case .roundPreferFloor: return r <= 0.5 ? [1, 0] : [0, 1]
            case .roundPreferCeil: return r < 0.5 ? [1, 0] : [0, 1]
            case .floor: return [1, 0]
            case .ceil: return [0, 1]
            }
        case .linear:
            guard antialias else { return [1 - r, r] }
            let s = min(scale, 1)
            let start = Int((-1 / s).rounded(.down)) + 1
            let c = (0..<(2 - 2 * start)).map { k in max(0, min(1, 1 - abs((Double(start + k) - r) * s))) }
            let sum = c.reduce(0, +)
            return c.map { $0 / sum }
        case .cubic:
            let a = cubicA
            guard antialias else {
                let p = r + 1, q = 1 - r, t = q + 1
                return [((a * p - 5 * a) * p + 8 * a) * p - 4 * a,
                        ((a + 2) * r - (a + 3)) * r * r + 1,
                        ((a + 2) * q - (a + 3)) * q * q + 1,
                        ((a * t - 5 * a) * t + 8 * a) * t - 4 * a]
            }
            let s = min(scale, 1)
            let start = Int((-2 / s).rounded(.down)) + 1
            let c = (start..<(2 - start)).map { i -> Double in
                let x = abs(s * (Double(i) - r))
                if x <= 1 { return (a + 2) * x * x * x - (a + 3) * x * x + 1 }
                if x < 2 { return a * x * x * x - 5 * a * x * x + 8 * a * x - 4 * a }
                return 0
            }
            let sum = c.reduce(0, +)
            return c.map { $0 / sum }
        }
    }

    /// One axis's taps: for each output index, `count` input indices (clamped into the input) and their weights.
    struct Taps {
        var count: Int
        var index: [Int]
        var weight: [Float]
    }

    /// The taps of axis `i` from `inSize` to `outSize` (the same arithmetic as `Reference.resize`, tabulated).
    func taps(_ i: Int, inSize: Int, outSize: Int) -> Taps {
        let scale = self.scale(i, inSize: inSize)
        var t = Taps(count: 0, index: [], weight: [])
        for y in 0..<outSize {
            let (first, c) = window(y, scale: scale, inSize: inSize, outSize: outSize)
            if t.count == 0 {
                t.count = c.count
                t.index.reserveCapacity(outSize * c.count); t.weight.reserveCapacity(outSize * c.count)
            }
            for k in 0..<c.count {
                t.index.append(min(max(first + k, 0), inSize - 1))
                t.weight.append(Float(c[k]))
            }
        }
        return t
    }

    /// The first tap of output index `y` (it may lie outside the input) and the taps' coefficients, with
    /// excludeOutside applied.
    func window(_ y: Int, scale: Double, inSize: Int, outSize: Int) -> (first: Int, coefficients: [Double]) {
        let x = original(y, scale: scale, inSize: inSize, outSize: outSize)
        let fl = x.rounded(.down)
        let r = x == fl ? 1 : x - fl
        var c = coefficients(r, scale: scale)
        let n = c.count
        // Clamped so huge coordinates cannot overflow Int; far-off windows read edge values either way.
        let base = Int(max(min(x - r, 1e15), -1e15))
        // The reference pads ⌈n/2⌉ edge values on each side and takes the n nearest indices of the padded input.
        let pad = (n + 1) / 2
        var first = base - n / 2 + 1
        first = max(first, -pad)
        first = min(first, inSize - 1 + pad - (n - 1))
        if excludeOutside {
            for k in 0..<n where first + k < 0 || first + k >= inSize { c[k] = 0 }
            let sum = c.reduce(0, +)
            if sum != 0 { c = c.map { $0 / sum } }
        }
        return (first, c)
    }
}

extension Reference {
    /// x (N,H,W,C) → y (N,OH,OW,C): each output element from its own coordinates, in Double.
    static func resize(_ s: Step, _ x: UnsafePointer<Float>, _ xs: [Int], _ y: UnsafeMutablePointer<Float>, _ ys: [Int]) {
        guard let spec = s.resize else { return }
        let (h, w, c) = (xs[1], xs[2], xs[3])
        let (oh, ow) = (ys[1], ys[2])
        let sh = spec.scale(0, inSize: h), sw = spec.scale(1, inSize: w)
        for b in 0..<ys[0] {
            for oy in 0..<oh {
                let (fy, cy) = spec.window(oy, scale: sh, inSize: h, outSize: oh)
                for ox in 0..<ow {
                    let (fx, cx) = spec.window(ox, scale: sw, inSize: w, outSize: ow)
                    for ch in 0..<c {
                        var acc = 0.0
                        for (i, wy) in cy.enumerated() {
                            let iy = min(max(fy + i, 0), h - 1)
                            var row = 0.0
                            for (j, wx) in cx.enumerated() {
                                let ix = min(max(fx + j, 0), w - 1)
                                row += wx * Double(x[((b * h + iy) * w + ix) * c + ch])
                            }
                            acc += wy * row
                        }
                        y[((b * oh + oy) * ow + ox) * c + ch] = Float(acc)
                    }
                }
            }
        }
    }
}

extension Fast {
    /// x (N,H,W,C) → y (N,OH,OW,C) from per-axis tap tables: nearest copies channel vectors; other modes sum the
    /// taps' channel vectors (taps with weight 0 skipped).
    static func resize(_ s: Step, _ x: UnsafePointer<Float>, _ xs: [Int], _ y: UnsafeMutablePointer<Float>, _ ys: [Int],
                       threads: Int) {
        guard let spec = s.resize else { return }
        let (batch, h, w, c) = (xs[0], xs[1], xs[2], xs[3])
        let (oh, ow) = (ys[1], ys[2])
        guard h > 0, w > 0, c > 0 else { Reference.resize(s, x, xs, y, ys); return }
        let th = spec.taps(0, inSize: h, outSize: oh), tw = spec.taps(1, inSize: w, outSize: ow)
        nonisolated(unsafe) let (x, y) = (x, y)
        let (nh, nw) = (th.count, tw.count)
        rowsInParallel(batch &* oh, elements: ys.reduce(1, &*), threads: threads) { r0, r1 in
        th.index.withUnsafeBufferPointer { hi in th.weight.withUnsafeBufferPointer { hw in
        tw.index.withUnsafeBufferPointer { wi in tw.weight.withUnsafeBufferPointer { ww in
            for line in r0..<r1 {
                let (b, oy) = line.quotientAndRemainder(dividingBy: oh)
                let xb = x + b &* h &* w &* c
                var out = y + line &* ow &* c
                do {
                    for ox in 0..<ow {
                        out.initialize(repeating: 0, count: c)
                        for i in 0..<nh {
                            let wy = hw[oy &* nh &+ i]
                            if wy == 0 { continue }
                            let row = xb + hi[oy &* nh &+ i] &* w &* c
                            for j in 0..<nw {
                                let wgt = wy * ww[ox &* nw &+ j]
                                if wgt == 0 { continue }
                                let p = row + wi[ox &* nw &+ j] &* c
                                if wgt == 1 {
                                    for ch in 0..<c { out[ch] += p[ch] }
                                } else {
                                    for ch in 0..<c { out[ch] += wgt * p[ch] }
                                }
                            }
                        }
                        out += c
                    }
                }
            }
        } } } }
        }
    }
}
