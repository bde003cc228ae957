extension TrainableGraph {
    /// An activation's shape, NHWC.
    public struct Shape: Equatable, Sendable {
        public var batch: Int, height: Int, width: Int, channels: Int
        public init(batch: Int, height: Int, width: Int, channels: Int) {
            (self.batch, self.height, self.width, self.channels) = (batch, height, width, channels)
        }
        public var count: Int { batch &* height &* width &* channels }
    }

    /// What a forward pass keeps for the backward one: every node's output, its pre-activation values (when the
    /// activation is not the identity) and its convolution's geometry.
    public struct Trace: Sendable {
        public let input: [Float], inputShape: Shape
        public fileprivate(set) var outputs: [[Float]] = [], shapes: [Shape] = []
        fileprivate var preActivations: [[Float]?] = [], geometries: [ConvGeometry?] = []
        /// The last node's output and its shape.
        public var output: [Float] { outputs.last ?? [] }
        public var outputShape: Shape { shapes.last ?? inputShape }
    }

    public func forward(_ x: [Float], shape: Shape) throws -> Trace {
        guard shape.count == x.count, x.count > 0 else {
            throw TrainError.shapeMismatch(what: "trainable graph input", expected: "\(shape) with elements", actual: "\(x.count)")
        }
        var trace = Trace(input: x, inputShape: shape)
        for node in nodes {
            let (value, valueShape) = input(node.inputs[0], trace)
            var geometry: ConvGeometry?, z: [Float], outShape = valueShape, activation = TrainableActivation.identity
            switch node.layer {
            case let .convolution(c):
                let g = try ConvGeometry(batch: valueShape.batch, height: valueShape.height, width: valueShape.width,
                                         channels: valueShape.channels, kernel: c.kernel, outChannels: c.outChannels,
                                         groups: c.groups, strides: c.strides, dilations: c.dilations, pads: c.pads)
                z = try ConvKernels.forward(g, x: value, w: parameters[c.weight], bias: parameters[c.bias])
                (geometry, activation) = (g, c.activation)
                outShape = Shape(batch: g.batch, height: g.outHeight, width: g.outWidth, channels: g.outChannels)
            case let .add(a):
                let (other, otherShape) = input(node.inputs[1], trace)
                guard otherShape == valueShape else {
                    throw TrainError.shapeMismatch(what: "trainable graph add", expected: "\(valueShape)", actual: "\(otherShape)")
                }
                z = zip(value, other).map { $0 + $1 }
                activation = a
            case .globalAveragePool:
                z = try LayoutOps.globalAveragePool(value, batch: valueShape.batch,
                                                    pixels: valueShape.height &* valueShape.width, channels: valueShape.channels)
                outShape = Shape(batch: valueShape.batch, height: 1, width: 1, channels: valueShape.channels)
            }
            trace.geometries.append(geometry)
            trace.preActivations.append(activation == .identity ? nil : z)
            trace.outputs.append(activation == .identity ? z : activation.forward(z))
            trace.shapes.append(outShape)
        }
        return trace
    }

    /// The gradients of Σ output·dOutput with respect to every parameter (same order as `parameters`) and the input.
    public func backward(_ trace: Trace, outputGradient: [Float]) throws -> (parameters: [[Float]], input: [Float]) {
        guard trace.outputs.count == nodes.count, outputGradient.count == trace.output.count else {
            throw TrainError.shapeMismatch(what: "trainable graph backward", expected: "a trace of this graph and \(trace.output.count) gradients",
                                           actual: "\(trace.outputs.count) nodes, \(outputGradient.count) gradients")
        }
        var grads = [[Float]?](repeating: nil, count: nodes.count)
        grads[nodes.count - 1] = outputGradient
        var parameterGrads = parameters.map { [Float](repeating: 0, count: $0.count) }
        var inputGrad = [Float](repeating: 0, count: trace.input.count)
        func accumulate(_ d: [Float], into j: Int) {
            if j == Self.input {
                add(d, into: &inputGrad)
                return
            }
            guard var sum = grads[j] else { grads[j] = d; return }
            grads[j] = nil   // one owner, so the sum is not copied
            add(d, into: &sum)
            grads[j] = sum
        }
        for i in stride(from: nodes.count - 1, through: 0, by: -1) {
            guard var dz = grads[i] else { continue }
            let node = nodes[i]
            if let pre = trace.preActivations[i], let activation = node.activationForBackward {
                try pre.withUnsafeBufferPointer { p in try dz.withUnsafeMutableBufferPointer { try activation.backward(x: p, dy: $0) } }
            }
            let (x, xShape) = input(node.inputs[0], trace)
            switch node.layer {
            case let .convolution(c):
                guard let g = trace.geometries[i] else { continue }
                let (dx, dw, db) = try ConvKernels.backward(g, x: x, w: parameters[c.weight], dy: dz)
                add(dw, into: &parameterGrads[c.weight])
                add(db, into: &parameterGrads[c.bias])
                accumulate(dx, into: node.inputs[0])
            case .add:
                accumulate(dz, into: node.inputs[0])
                accumulate(dz, into: node.inputs[1])
            case .globalAveragePool:
                accumulate(try LayoutOps.globalAveragePoolBackward(dz, batch: xShape.batch, pixels: xShape.height &* xShape.width,
                                                                   channels: xShape.channels), into: node.inputs[0])
            }
        }
        return (parameterGrads, inputGrad)
    }

    private func input(_ j: Int, _ trace: Trace) -> ([Float], Shape) {
        j == Self.input ? (trace.input, trace.inputShape) : (trace.outputs[j], trace.shapes[j])
    }
}

extension TrainableGraph.Node {
    /// The activation applied after the node's layer, when it is not the identity.
    var activationForBackward: TrainableActivation? {
        switch layer {
        case let .convolution(c): return c.activation == .identity ? nil : c.activation
        case let .add(a): return a == .identity ? nil : a
        case .globalAveragePool: return nil
        }
    }
}

/// a += b, element by element (equal counts).
func add(_ b: [Float], into a: inout [Float]) {
    a.withUnsafeMutableBufferPointer { ab in
        b.withUnsafeBufferPointer { bb in
            for i in 0..<min(ab.count, bb.count) { ab[i] += bb[i] }
        }
    }
}
