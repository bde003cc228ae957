import MLToolCore
import MLToolTestSupport
import Testing
@testable import MLToolTrain

/// The fast convolution kernels (`ConvKernels`: SGEMM on im2col, direct depthwise) against the scalar reference in
/// Float, on the gradient tests' shapes and on sizes of a real network's top (EfficientNet-Lite0's 7×7 stage).
/// Measured on AMD EPYC Zen 4 (AVX-512, OpenBLAS): worst difference 1.1e-5 on values of magnitude ~10 (the 5×5
/// depthwise over 4 × 7 × 7 × 96), 1e-6 on the small shapes; bound 1e-5 relative + 1e-5.
@Suite struct BackpropKernelTests {
    static let shapes: [ConvGeometry] = BackpropGradientTests.geometries + [
        try? ConvGeometry(batch: 4, height: 7, width: 7, channels: 192, kernel: (1, 1), outChannels: 48),
        try? ConvGeometry(batch: 4, height: 7, width: 7, channels: 96, kernel: (5, 5), outChannels: 96, groups: 96,
                          pads: (2, 2, 2, 2)),
        try? ConvGeometry(batch: 2, height: 14, width: 14, channels: 24, kernel: (3, 3), outChannels: 32,
                          strides: (2, 2), pads: (0, 0, 1, 1)),
    ].compactMap { $0 }

    @Test(arguments: shapes)
    func fastMatchesReference(_ g: ConvGeometry) throws {
        var rng = SplitMix64(seed: 23)
        let x = random(g.inputCount, &rng).map(Float.init), w = random(g.weightCount, &rng).map(Float.init)
        let b = random(g.outChannels, &rng).map(Float.init), dy = random(g.outputCount, &rng).map(Float.init)
        assertClose(try ConvKernels.forward(g, x: x, w: w, bias: b), try ConvReference.forward(g, x: x, w: w, bias: b),
                    rtol: 1e-5, atol: 1e-5, "\(g) y")
        let fast = try ConvKernels.backward(g, x: x, w: w, dy: dy)
        let reference = try ConvReference.backward(g, x: x, w: w, dy: dy)
        assertClose(fast.dx, reference.dx, rtol: 1e-5, atol: 1e-5, "\(g) dx")
        assertClose(fast.dw, reference.dw, rtol: 1e-5, atol: 1e-5, "\(g) dw")
        assertClose(fast.db, reference.db, rtol: 1e-5, atol: 1e-5, "\(g) db")
    }

    @Test func shapesAreAllBuilt() { #expect(Self.shapes.count == 12) }

    @Test func mismatchedSizesAreNamed() throws {
        let g = try ConvGeometry(batch: 1, height: 2, width: 2, channels: 2, kernel: (1, 1), outChannels: 2)
        #expect(throws: TrainError.shapeMismatch(what: "\(g): w", expected: "4 elements", actual: "3")) {
            try ConvKernels.forward(g, x: [0, 0, 0, 0, 0, 0, 0, 0], w: [0, 0, 0], bias: nil)
        }
        #expect(throws: TrainError.self) {
            try ConvGeometry(batch: 1, height: 2, width: 2, channels: 3, kernel: (1, 1), outChannels: 2, groups: 2)
        }
        #expect(throws: TrainError.self) {
            try ConvGeometry(batch: 1, height: 2, width: 2, channels: 2, kernel: (5, 5), outChannels: 2)
        }
    }

    @Test func activationKernelMatchesReference() throws {
        var rng = SplitMix64(seed: 29)
        let x = random(257, &rng).map { Float($0 * 8) }, dy = random(257, &rng).map(Float.init)
        for a in TrainableActivation.allCases {
            var fast = dy
            try x.withUnsafeBufferPointer { xb in try fast.withUnsafeMutableBufferPointer { try a.backward(x: xb, dy: $0) } }
            assertClose(fast, try a.backward(x: x, dy: dy), rtol: 1e-6, atol: 1e-7, a.rawValue)
        }
    }
}
