import CMLToolKernels
import Foundation
import MLToolCore
import Testing
import MLToolEngine
import MLToolTestSupport

/// One small graph per op and edge case; the fast path must match the scalar reference.
enum OpCase: String, CaseIterable, CustomTestStringConvertible {
    case conv3x3, conv1x1, conv1x1Wide, conv1x1Stride2, conv5x5AsymPad, convStride2Odd, convDilation2, convGroups2, convGroups2x1x1
    case depthwise3x3, depthwise5x5Stride2, depthwiseDilated, depthwiseOddChannels, depthwiseMultiplier2
    case depthwiseWide, depthwiseWideOdd, depthwiseRow3x3, depthwiseRow5x5, depthwiseRowStride2, depthwiseRow5x5Stride2
    case depthwiseManyChannels, conv1x1SplitRows, conv1x1SplitColumns, convOneChannel, convOneChannelIn, convOneToOneStem
    case convNoBias, convRelu6, convLeaky, convHardSwish, convSigmoid, convSwish, convSwishWide
    case dense, denseFromRank4, matMul, matMulRank3, batchNorm
    case relu, clip, leakyRelu, sigmoid, hardSigmoid, hardSwish, swish, tanh, identity
    case softmaxLast, softmaxAxis1, softmaxWideInner, softmaxRows, convStemWide, convWinograd, convWinogradPads
    case addSame, addChannel, mulSE, subScalar, divRow, addBothBroadcast, addRankDiff, addFusedRelu
    case maxPool, maxPoolCeil, avgPoolPadExclude, avgPoolPadInclude, avgPoolCeilInclude
    case globalAvg, globalMax
    case concatChannels, concatAxis1, reshape, flatten, transpose, transposePlane, transposeKeys, squeeze, unsqueeze
    case padConstant, padReflect, padEdge
    case pow, powSquare, resizeNearestUp, resizeNearestDown, resizeNearestCeil, resizeLinearHalfPixel, resizeLinearAlignCorners
    case resizeLinearPytorch, resizeLinearAntialias, resizeCubic, resizeCubicExclude, resizeCubicAntialias, resizeSymmetric
    case sliceChannels, sliceStrided, sliceBackwards, sliceTwoAxes, topKValues, topKIndices, topKSmallest

    var testDescription: String { rawValue }

    /// The model and its input.
    func build() -> (Model, Tensor) {
        var g = GraphBuilder(seed: UInt64(OpCase.allCases.firstIndex(of: self)! + 1), input: [-1, 7, 9, 6])
        let x = "x"
        var inShape = [2, 7, 9, 6]
        var out: String
        switch self {
        case .conv3x3: out = g.conv(x, cin: 6, cout: 10, k: (3, 3), pads: [1, 1, 1, 1])
        case .conv1x1: out = g.conv(x, cin: 6, cout: 11, k: (1, 1))
        case .conv1x1Wide: out = g.conv(x, cin: 6, cout: 90, k: (1, 1), act: .relu6)
        case .conv1x1Stride2: out = g.conv(x, cin: 6, cout: 5, k: (1, 1), stride: 2)
        case .conv5x5AsymPad: out = g.conv(x, cin: 6, cout: 9, k: (5, 5), pads: [1, 2, 3, 0])
        case .convStride2Odd: out = g.conv(x, cin: 6, cout: 7, k: (3, 3), stride: 2, pads: [0, 0, 1, 1])
        case .convDilation2: out = g.conv(x, cin: 6, cout: 4, k: (3, 3), dilation: 2, pads: [2, 2, 2, 2])
        case .convGroups2: out = g.conv(x, cin: 6, cout: 8, k: (3, 2), pads: [1, 0, 1, 1], groups: 2)
        case .convGroups2x1x1: out = g.conv(x, cin: 6, cout: 4, k: (1, 1), groups: 2)
        case .depthwise3x3: out = g.conv(x, cin: 6, cout: 6, k: (3, 3), pads: [1, 1, 1, 1], groups: 6)
        case .depthwise5x5Stride2:
            inShape = [2, 11, 10, 24]; g.inputs[0].shape = [-1, 11, 10, 24]
            out = g.conv(x, cin: 24, cout: 24, k: (5, 5), stride: 2, pads: [1, 2, 2, 1], groups: 24, act: .relu6)
        case .depthwiseDilated:
            inShape = [1, 9, 9, 16]; g.inputs[0].shape = [-1, 9, 9, 16]
            out = g.conv(x, cin: 16, cout: 16, k: (3, 3), dilation: 2, pads: [2, 2, 2, 2], groups: 16)
        case .depthwiseOddChannels:
            inShape = [2, 8, 5, 19]; g.inputs[0].shape = [-1, 8, 5, 19]
            out = g.conv(x, cin: 19, cout: 19, k: (3, 3), stride: 2, pads: [1, 1, 1, 1], groups: 19, act: .relu)
        case .depthwiseWide:
            inShape = [1, 9, 11, 96]; g.inputs[0].shape = [-1, 9, 11, 96]
            out = g.conv(x, cin: 96, cout: 96, k: (5, 5), pads: [2, 2, 2, 2], groups: 96, act: .relu6)
        case .depthwiseWideOdd:
            inShape = [2, 7, 10, 70]; g.inputs[0].shape = [-1, 7, 10, 70]
            out = g.conv(x, cin: 70, cout: 70, k: (3, 3), stride: 2, pads: [1, 1, 1, 1], groups: 70, act: Activation(op: .hardSwish))
        case .depthwiseRow3x3:   // rows wide enough for the 8-pixel kernels
            inShape = [1, 5, 27, 32]; g.inputs[0].shape = [-1, 5, 27, 32]
            out = g.conv(x, cin: 32, cout: 32, k: (3, 3), pads: [1, 1, 1, 1], groups: 32, act: .relu6)
        case .depthwiseRow5x5:
            inShape = [2, 6, 23, 48]; g.inputs[0].shape = [-1, 6, 23, 48]
            out = g.conv(x, cin: 48, cout: 48, k: (5, 5), pads: [2, 2, 2, 2], groups: 48, act: Activation(op: .hardSwish))
        case .depthwiseRowStride2:
            inShape = [1, 7, 41, 16]; g.inputs[0].shape = [-1, 7, 41, 16]
            out = g.conv(x, cin: 16, cout: 16, k: (3, 3), stride: 2, pads: [0, 0, 1, 1], groups: 16)
        case .depthwiseRow5x5Stride2:
            inShape = [1, 9, 44, 80]; g.inputs[0].shape = [-1, 9, 44, 80]
            out = g.conv(x, cin: 80, cout: 80, k: (5, 5), stride: 2, pads: [1, 2, 2, 1], groups: 80, act: .relu6)
        case .depthwiseManyChannels:   // few rows, many channels: split across threads by slices of 64 channels
            inShape = [1, 7, 7, 1000]; g.inputs[0].shape = [-1, 7, 7, 1000]
            out = g.conv(x, cin: 1000, cout: 1000, k: (5, 5), pads: [2, 2, 2, 2], groups: 1000, act: .relu6)
        case .conv1x1SplitRows:   // 196 rows: split across threads in ranges of 8 rows
            inShape = [1, 14, 14, 40]; g.inputs[0].shape = [-1, 14, 14, 40]
            out = g.conv(x, cin: 40, cout: 240, k: (1, 1), act: .relu6)
        case .conv1x1SplitColumns:   // 49 rows: split across threads in groups of 48 output channels
            inShape = [1, 7, 7, 64]; g.inputs[0].shape = [-1, 7, 7, 64]
            out = g.conv(x, cin: 64, cout: 330, k: (1, 1))
        case .convOneChannel:   // groups == 1 == channels: depthwise by shape, but packed for the GEMM
            inShape = [2, 9, 7, 1]; g.inputs[0].shape = [-1, 9, 7, 1]
            out = g.conv(x, cin: 1, cout: 1, k: (3, 3), pads: [1, 1, 1, 1])
        case .convOneChannelIn:   // grayscale stem: 1 → 8 channels
            inShape = [2, 9, 7, 1]; g.inputs[0].shape = [-1, 9, 7, 1]
            out = g.conv(x, cin: 1, cout: 8, k: (3, 3), stride: 2, pads: [1, 1, 1, 1], act: .relu6)
        case .convOneToOneStem:   // 1 → 1 with stride 2 and asymmetric pads
            inShape = [1, 12, 10, 1]; g.inputs[0].shape = [-1, 12, 10, 1]
            out = g.conv(x, cin: 1, cout: 1, k: (3, 3), stride: 2, pads: [0, 0, 1, 1])
        case .depthwiseMultiplier2: out = g.conv(x, cin: 6, cout: 12, k: (3, 3), pads: [1, 1, 1, 1], groups: 6)
        case .convNoBias: out = g.conv(x, cin: 6, cout: 3, k: (2, 2), bias: false)
        case .convRelu6: out = g.conv(x, cin: 6, cout: 12, k: (3, 3), stride: 2, pads: [0, 0, 1, 1], act: .relu6)
        case .convLeaky: out = g.conv(x, cin: 6, cout: 9, k: (1, 1), act: Activation(op: .leakyRelu, alpha: 0.1))
        case .convHardSwish: out = g.conv(x, cin: 6, cout: 9, k: (3, 3), act: Activation(op: .hardSwish))
        case .convSigmoid: out = g.conv(x, cin: 6, cout: 17, k: (1, 1), act: Activation(op: .sigmoid))
        case .convSwish: out = g.conv(x, cin: 6, cout: 19, k: (3, 3), pads: [1, 1, 1, 1], act: Activation(op: .swish))
        case .convSwishWide: out = g.conv(x, cin: 6, cout: 48, k: (1, 1), act: Activation(op: .swish))
        case .dense:
            inShape = [3, 13]; g.inputs[0].shape = [-1, 13]
            out = g.dense(x, 13, 10, act: .relu)
        case .denseFromRank4: out = g.dense(x, 7 * 9 * 6, 5)
        case .matMul:
            inShape = [3, 12]; g.inputs[0].shape = [-1, 12]
            out = g.node(.matMul, [x, g.constant([12, 7])])
        case .matMulRank3:
            inShape = [2, 5, 12]; g.inputs[0].shape = [-1, 5, 12]
            out = g.node(.matMul, [x, g.constant([12, 9])])
        case .batchNorm: out = g.batchNorm(x, 6)
        case .relu: out = g.node(.relu, [x])
        case .clip: out = g.node(.clip, [x], Attributes(min: -0.3, max: 0.5))
        case .leakyRelu: out = g.node(.leakyRelu, [x], Attributes(alpha: 0.2))
        case .sigmoid: out = g.node(.sigmoid, [x])
        case .hardSigmoid: out = g.node(.hardSigmoid, [x], Attributes(alpha: 0.3, beta: 0.4))
        case .hardSwish: out = g.node(.hardSwish, [x])
        case .swish: out = g.node(.swish, [x])
        case .tanh: out = g.node(.tanh, [x])
        case .identity: out = g.node(.identity, [x])
        case .softmaxLast: out = g.node(.softmax, [x])
        case .softmaxAxis1: out = g.node(.softmax, [x], Attributes(axis: 1))
        case .softmaxWideInner:
            // A YOLOv8 DFL softmax's shape: 16 bins along axis 1, lanes split across threads, 8 at a time and a tail.
            inShape = [1, 16, 4, 603]; g.inputs[0].shape = [-1, 16, 4, 603]
            out = g.node(.softmax, [x], Attributes(axis: 1))
        case .softmaxRows:
            // The same DFL softmax on the last axis (rows of 16, 8 at a time and a tail), split across threads.
            inShape = [1, 4, 603, 16]; g.inputs[0].shape = [-1, 4, 603, 16]
            out = g.node(.softmax, [x])
        case .convWinograd:
            // Stride-1 3×3 with more than 16 input channels: Winograd F(2×2, 3×3); odd sizes leave partial tiles,
            // large enough to split tiles and positions across threads.
            inShape = [2, 29, 31, 24]; g.inputs[0].shape = [-1, 29, 31, 24]
            out = g.conv(x, cin: 24, cout: 20, k: (3, 3), pads: [1, 1, 1, 1], act: Activation(op: .swish))
        case .convWinogradPads:
            // Asymmetric padding (top 0, left 2, bottom 1, right 0), no bias, a non-vector activation.
            inShape = [1, 7, 9, 33]; g.inputs[0].shape = [-1, 7, 9, 33]
            out = g.conv(x, cin: 33, cout: 17, k: (3, 3), pads: [0, 2, 1, 0], bias: false, act: Activation(op: .hardSwish))
        case .convStemWide:
            // A stem: 3 input channels, 24 outputs (one full 16-column panel and a part), interior pixels in place, large
            // enough to split across threads.
            inShape = [1, 61, 64, 3]; g.inputs[0].shape = [-1, 61, 64, 3]
            out = g.conv(x, cin: 3, cout: 24, k: (3, 3), stride: 2, pads: [1, 1, 1, 1], act: Activation(op: .swish))
        case .addSame: out = g.node(.add, [x, g.node(.relu, [x])])
        case .addChannel: out = g.node(.add, [x, g.constant([6])])
        case .mulSE: out = g.node(.mul, [x, g.node(.globalAvgPool, [x])])
        case .subScalar: out = g.node(.sub, [g.constant([1]), x])
        case .divRow: out = g.node(.div, [x, g.constant([9, 1], 0.5, 2)])
        case .addBothBroadcast:
            inShape = [2, 7, 1, 6]; g.inputs[0].shape = [-1, 7, 1, 6]
            out = g.node(.add, [x, g.constant([1, 1, 5, 1])])
        case .addRankDiff: out = g.node(.mul, [g.constant([7, 1, 6]), x])
        case .addFusedRelu: out = g.node(.add, [x, g.node(.tanh, [x])], Attributes(activation: .relu))
        case .maxPool: out = g.node(.maxPool, [x], Attributes(kernel: [3, 3], strides: [2, 2], pads: [1, 1, 1, 1]))
        case .maxPoolCeil: out = g.node(.maxPool, [x], Attributes(kernel: [2, 2], strides: [2, 2], ceilMode: true))
        case .avgPoolPadExclude:
            out = g.node(.avgPool, [x], Attributes(kernel: [3, 3], strides: [2, 2], pads: [1, 1, 1, 1], countIncludePad: false))
        case .avgPoolPadInclude:
            out = g.node(.avgPool, [x], Attributes(kernel: [3, 2], strides: [1, 2], pads: [1, 0, 1, 1], countIncludePad: true))
        case .avgPoolCeilInclude:
            out = g.node(.avgPool, [x], Attributes(kernel: [3, 3], strides: [2, 2], pads: [1, 1, 1, 1], ceilMode: true, countIncludePad: true))
        case .globalAvg: out = g.node(.globalAvgPool, [x])
        case .globalMax: out = g.node(.globalMaxPool, [x])
        case .concatChannels: out = g.node(.concat, [x, g.node(.relu, [x]), x], Attributes(axis: -1))
        case .concatAxis1: out = g.node(.concat, [x, g.node(.sigmoid, [x])], Attributes(axis: 1))
        case .reshape: out = g.node(.reshape, [x], Attributes(shape: [0, -1, 6]))
        case .flatten: out = g.node(.flatten, [x])
        case .transpose: out = g.node(.transpose, [x], Attributes(perm: [0, 3, 1, 2]))
        case .transposePlane:
            // The input's innermost axis moves inward: planes of 13 × 19, tiles of 8 and tails.
            inShape = [2, 19, 5, 13]; g.inputs[0].shape = [-1, 19, 5, 13]
            out = g.node(.transpose, [x], Attributes(perm: [0, 2, 3, 1]))
        case .transposeKeys:
            // Attention keys (N, T, heads, d) → (N, heads, d, T): 4 planes of 67 × 130, split in strips across threads.
            inShape = [1, 130, 4, 67]; g.inputs[0].shape = [-1, 130, 4, 67]
            out = g.node(.transpose, [x], Attributes(perm: [0, 2, 3, 1]))
        case .squeeze:
            inShape = [2, 1, 9, 6]; g.inputs[0].shape = [-1, 1, 9, 6]
            out = g.node(.squeeze, [x], Attributes(axes: [1]))
        case .unsqueeze: out = g.node(.unsqueeze, [x], Attributes(axes: [1, -1]))
        case .padConstant: out = g.node(.pad, [x], Attributes(pads: [0, 1, 2, 0, 0, 2, 0, 1], value: 0.5, mode: "constant"))
        case .padReflect: out = g.node(.pad, [x], Attributes(pads: [0, 2, 1, 0, 0, 1, 3, 0], mode: "reflect"))
        case .padEdge: out = g.node(.pad, [x], Attributes(pads: [0, 3, 0, 0, 0, 1, 2, 0], mode: "edge"))
        case .pow: out = g.node(.pow, [g.node(.sigmoid, [x]), g.constant([6], 0.5, 3)])
        case .powSquare: out = g.node(.pow, [x, g.constant([1], 2, 2)])
        case .resizeNearestUp:
            out = g.node(.resize, [x], Attributes(shape: [14, 18], mode: "nearest", scales: [2, 2], coordinateMode: "asymmetric", nearestMode: "floor"))
        case .resizeNearestDown:
            out = g.node(.resize, [x], Attributes(shape: [4, 5], mode: "nearest", coordinateMode: "half_pixel"))
        case .resizeNearestCeil:
            out = g.node(.resize, [x], Attributes(shape: [10, 13], mode: "nearest", coordinateMode: "tf_half_pixel_for_nn", nearestMode: "ceil"))
        case .resizeLinearHalfPixel: out = g.node(.resize, [x], Attributes(shape: [14, 18], mode: "linear", coordinateMode: "half_pixel"))
        case .resizeLinearAlignCorners:
            out = g.node(.resize, [x], Attributes(shape: [11, 6], mode: "linear", coordinateMode: "align_corners"))
        case .resizeLinearPytorch:
            out = g.node(.resize, [x], Attributes(shape: [1, 20], mode: "linear", coordinateMode: "pytorch_half_pixel"))
        case .resizeLinearAntialias:
            out = g.node(.resize, [x], Attributes(shape: [3, 4], mode: "linear", coordinateMode: "half_pixel", antialias: true))
        case .resizeCubic:
            out = g.node(.resize, [x], Attributes(shape: [12, 15], alpha: -0.5, mode: "cubic", coordinateMode: "asymmetric"))
        case .resizeCubicExclude:
            out = g.node(.resize, [x], Attributes(shape: [12, 15], mode: "cubic", coordinateMode: "half_pixel", excludeOutside: true))
        case .resizeCubicAntialias:
            out = g.node(.resize, [x], Attributes(shape: [3, 5], mode: "cubic", coordinateMode: "half_pixel", antialias: true))
        case .resizeSymmetric:
            out = g.node(.resize, [x], Attributes(shape: [5, 6], mode: "linear", scales: [0.75, 0.7], coordinateMode: "half_pixel_symmetric"))
        case .sliceChannels: out = g.node(.slice, [x], Attributes(axes: [3], starts: [2], steps: [1], counts: [3]))
        case .sliceStrided: out = g.node(.slice, [x], Attributes(axes: [2], starts: [1], steps: [3], counts: [3]))
        case .sliceBackwards: out = g.node(.slice, [x], Attributes(axes: [-1], starts: [5], steps: [-2], counts: [3]))
        case .sliceTwoAxes: out = g.node(.slice, [x], Attributes(axes: [1, 3], starts: [6, 0], steps: [-1, 2], counts: [4, 3]))
        case .topKValues: out = g.node(.topK, [x], Attributes(axis: 2, mode: "values", k: 4))
        case .topKIndices: out = g.node(.topK, [x], Attributes(axis: -1, mode: "indices", k: 3))
        case .topKSmallest: out = g.node(.topK, [x], Attributes(axis: 1, mode: "values", k: 7, largest: false))
        }
        let input = g.input(inShape)
        return (g.model(outputs: [out]), input)
    }
}

@Suite struct OpTests {
    @Test(arguments: OpCase.allCases)
    func fastMatchesReference(_ c: OpCase) throws {
        let (model, input) = c.build()
        for threads in [1, 2] {
            let (fast, ref) = try bothModes(model, ["x": input], threads: threads)
            let name = model.metadata.graph!.outputs[0]
            let f = try #require(fast[name]), r = try #require(ref[name])
            assertClose(f, r, rtol: fastTolerance, atol: fastTolerance, "\(c) with \(threads) threads")
        }
    }

    /// Ops split across threads (by rows, columns or channel slices) give the same bits as on one thread.
    @Test(arguments: [OpCase.depthwiseManyChannels, .conv1x1SplitRows, .conv1x1SplitColumns, .softmaxWideInner, .softmaxRows, .convStemWide, .convWinograd,
                      .transposeKeys])
    func splitAcrossThreadsIsBitIdentical(_ c: OpCase) throws {
        let (model, input) = c.build()
        let name = model.metadata.graph!.outputs[0]
        let a = try #require(try Engine(model: model, threads: 1).run(["x": input])[name])
        let b = try #require(try Engine(model: model, threads: 2).run(["x": input])[name])
        #expect(a.data.map(\.bitPattern) == b.data.map(\.bitPattern), "\(c)")
    }
}

/// Every kernel variant this CPU can run (portable C, AVX2+FMA, AVX-512, ...) against the reference, on the op cases
/// that reach the C kernels. The level is this test thread's own (`forEachCPULevel`): tests running meanwhile keep
/// the process's.
@Suite struct KernelVariantTests {
    @Test func everySimdLevelMatchesReference() throws {
        let cases: [OpCase] = [.conv3x3, .conv1x1, .conv1x1Wide, .conv5x5AsymPad, .convStride2Odd, .convSigmoid, .convLeaky,
                               .convSwish, .convSwishWide, .sigmoid, .swish,
                               .depthwise3x3, .depthwise5x5Stride2, .depthwiseDilated, .depthwiseOddChannels, .depthwiseWide,
                               .depthwiseWideOdd, .depthwiseRow3x3, .depthwiseRow5x5, .depthwiseRowStride2,
                               .depthwiseRow5x5Stride2, .depthwiseManyChannels, .conv1x1SplitRows, .conv1x1SplitColumns,
                               .dense, .addSame, .addFusedRelu, .relu, .hardSwish, .maxPool, .maxPoolCeil, .avgPoolPadExclude,
                               .softmaxLast, .softmaxAxis1, .softmaxWideInner, .softmaxRows, .convStemWide,
                               .convWinograd, .convWinogradPads, .transposePlane, .transposeKeys]
        let levels = try forEachCPULevel { level in
            for c in cases {
                let (model, input) = c.build()
                let (fast, ref) = try bothModes(model, ["x": input], threads: 2)
                let name = model.metadata.graph!.outputs[0]
                assertClose(try #require(fast[name]), try #require(ref[name]), rtol: fastTolerance, atol: fastTolerance,
                            "\(c) at CPU level \(level)")
            }
        }
        // The levels tested are the ones this CPU has: a detector that under-reports would leave a variant untested.
        let flags = Self.cpuFlags()
        var expected: [Int32] = [0]
        if flags.isSuperset(of: ["avx2", "fma"]) {
            expected.append(1)
            if flags.contains("avx_vnni") { expected.append(2) }
            if flags.contains("avx512f") { expected.append(3) }
            if flags.isSuperset(of: ["avx512f", "avx512bw", "avx512vl", "avx512_vnni"]) { expected.append(4) }
        }
        #expect(levels == expected, "levels tested \(levels); /proc/cpuinfo has \(expected)")
    }

    /// The engine's workers run this thread's chunks at this thread's level: split across two threads, every level
    /// gives the bits of one thread at that level. (Levels round differently, so a helper at the process's level
    /// would change some of them; the test checks that they do differ on this machine, else it could not tell.)
    @Test func workersTakeTheCallersLevel() throws {
        let cases: [OpCase] = [.conv1x1SplitRows, .conv1x1SplitColumns, .convStemWide, .convWinograd]
        var bits: [Int32: [[UInt32]]] = [:]
        let levels = try forEachCPULevel { level in
            for c in cases {
                let (model, input) = c.build()
                let name = model.metadata.graph!.outputs[0]
                let one = try #require(try Engine(model: model, threads: 1).run(["x": input])[name])
                let two = try #require(try Engine(model: model, threads: 2).run(["x": input])[name])
                let differ = zip(one.data, two.data).filter { $0.bitPattern != $1.bitPattern }.count
                #expect(one.shape == two.shape && differ == 0, "\(c) at CPU level \(level): \(differ) values differ")
                bits[level, default: []].append(one.data.map(\.bitPattern))
            }
        }
        guard let best = levels.last, levels.count > 1 else { return }
        #expect(levels.dropLast().contains { bits[$0] != bits[best] }, "every level gave the same bits: the check above proves nothing")
    }

    /// The CPU feature flags of /proc/cpuinfo (empty where there is none: then only the portable level exists).
    static func cpuFlags() -> Set<String> {
        // Read to the end: /proc files report a size of 0, which String(contentsOfFile:) would take at its word.
        guard let h = FileHandle(forReadingAtPath: "/proc/cpuinfo") else { return [] }
        let text = String(decoding: h.readDataToEndOfFile(), as: UTF8.self)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("flags") }) else { return [] }
        return Set(line.split(separator: ":", maxSplits: 1).last?.split(separator: " ").map(String.init) ?? [])
    }
}
