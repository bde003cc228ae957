import MLToolCore

/// The shape of one 2-D convolution in the IR's layout: input x (N, H, W, C), weights w (KH, KW, C/groups, OC),
/// bias (OC), output y (N, OH, OW, OC), with OH = (H + top + bottom − dh·(KH − 1) − 1) / sh + 1 (and OW alike).
/// Depthwise is `groups == C`. Every count is computed once here, overflow-checked, so the kernels that take a
/// geometry index with wrapping arithmetic.
public struct ConvGeometry: Equatable, Sendable, CustomStringConvertible {
    public let batch: Int, height: Int, width: Int, channels: Int
    public let kernelHeight: Int, kernelWidth: Int, outChannels: Int, groups: Int
    public let strideH: Int, strideW: Int, dilationH: Int, dilationW: Int
    public let padTop: Int, padLeft: Int, padBottom: Int, padRight: Int
    public let outHeight: Int, outWidth: Int
    /// Element counts of x, w and y.
    public let inputCount: Int, weightCount: Int, outputCount: Int

    public init(batch: Int, height: Int, width: Int, channels: Int, kernel: (Int, Int), outChannels: Int,
                groups: Int = 1, strides: (Int, Int) = (1, 1), dilations: (Int, Int) = (1, 1),
                pads: (top: Int, left: Int, bottom: Int, right: Int) = (0, 0, 0, 0)) throws {
        func bad(_ expected: String) -> TrainError {
            .shapeMismatch(what: "convolution", expected: expected,
                           actual: "x (\(batch), \(height), \(width), \(channels)), kernel \(kernel), \(outChannels) outputs, groups \(groups), strides \(strides), dilations \(dilations), pads \(pads)")
        }
        let positive = [batch, height, width, channels, kernel.0, kernel.1, outChannels, groups, strides.0, strides.1,
                        dilations.0, dilations.1]
        guard positive.allSatisfy({ $0 > 0 }), [pads.top, pads.left, pads.bottom, pads.right].allSatisfy({ $0 >= 0 })
        else { throw bad("positive sizes, strides and dilations, pads ≥ 0") }
        guard channels % groups == 0, outChannels % groups == 0 else { throw bad("groups dividing C and OC") }
        let spanH = try Checked.add(try Checked.mul(dilations.0, kernel.0 - 1), 1)
        let spanW = try Checked.add(try Checked.mul(dilations.1, kernel.1 - 1), 1)
        let paddedH = try Checked.add(height, try Checked.add(pads.top, pads.bottom))
        let paddedW = try Checked.add(width, try Checked.add(pads.left, pads.right))
        guard paddedH >= spanH, paddedW >= spanW else { throw bad("a kernel span within the padded input") }
        (self.batch, self.height, self.width, self.channels) = (batch, height, width, channels)
        (kernelHeight, kernelWidth, self.outChannels, self.groups) = (kernel.0, kernel.1, outChannels, groups)
        (strideH, strideW, dilationH, dilationW) = (strides.0, strides.1, dilations.0, dilations.1)
        (padTop, padLeft, padBottom, padRight) = pads
        outHeight = (paddedH - spanH) / strides.0 + 1
        outWidth = (paddedW - spanW) / strides.1 + 1
        inputCount = try Checked.elementCount([batch, height, width, channels])
        weightCount = try Checked.elementCount([kernel.0, kernel.1, channels / groups, outChannels])
        outputCount = try Checked.elementCount([batch, outHeight, outWidth, outChannels])
        // The im2col matrix of the fast kernels: (N·OH·OW) × (KH·KW·C/groups) per group.
        _ = try Checked.elementCount([batch, outHeight, outWidth, kernel.0, kernel.1, channels])
    }

    /// Channels per group on the input and output side.
    public var groupChannels: Int { channels / groups }
    public var groupOutChannels: Int { outChannels / groups }
    /// Whether every group has one input channel (depthwise, with any channel multiplier).
    public var isDepthwise: Bool { groups == channels && groups > 1 }
    /// Rows and columns of one group's im2col matrix.
    var patchRows: Int { batch &* outHeight &* outWidth }
    var patchColumns: Int { kernelHeight &* kernelWidth &* groupChannels }

    public var description: String {
        "conv x (\(batch), \(height), \(width), \(channels)) w (\(kernelHeight), \(kernelWidth), \(groupChannels), \(outChannels)) groups \(groups) strides (\(strideH), \(strideW)) dilations (\(dilationH), \(dilationW)) pads (\(padTop), \(padLeft), \(padBottom), \(padRight)) → (\(batch), \(outHeight), \(outWidth), \(outChannels))"
    }

    /// Calls `body(n, oy, ox, ky, kx, iy, ix)` for every output position and kernel tap that reads inside the input.
    @inline(__always)
    func forEachTap(_ body: (Int, Int, Int, Int, Int, Int, Int) -> Void) {
        for n in 0..<batch {
            for oy in 0..<outHeight {
                for ox in 0..<outWidth {
                    for ky in 0..<kernelHeight {
                        let iy = oy &* strideH &- padTop &+ ky &* dilationH
                        guard iy >= 0, iy < height else { continue }
                        for kx in 0..<kernelWidth {
                            let ix = ox &* strideW &- padLeft &+ kx &* dilationW
                            guard ix >= 0, ix < width else { continue }
                            body(n, oy, ox, ky, kx, iy, ix)
                        }
                    }
                }
            }
        }
    }
}
