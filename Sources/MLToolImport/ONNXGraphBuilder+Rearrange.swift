import MLToolCore

/// DepthToSpace and SpaceToDepth (DCR and CRD, SpaceToDepth's mode from opset 25) and Tile as exact rearrangements: a reshape to rank 6, a transpose and a
/// reshape back (ONNX's own definitions), and for Tile one concat of copies per repeated axis.
extension ONNXGraphBuilder {
    /// Most copies Tile may concatenate along one axis.
    static let maxTileRepeats = 4096

    mutating func depthToSpace(_ node: ONNXFile.Node) throws {
        let (x, b, out) = try blockInput(node)
        let (n, c, h, w) = (x.shape[0], x.shape[1], x.shape[2], x.shape[3])
        guard c % (b * b) == 0 else {
            throw ImportError.invalid(file: file, place: "\(place(node)) blocksize", expected: "a block whose square divides the \(c) channels", actual: "\(b)")
        }
        let mode = string(node, "mode", "DCR")
        let split: [Int], perm: [Int]
        switch mode {
        case "DCR": (split, perm) = ([n, b, b, c / (b * b), h, w], [0, 3, 4, 1, 5, 2])
        case "CRD": (split, perm) = ([n, c / (b * b), b, b, h, w], [0, 1, 4, 2, 5, 3])
        default: throw ImportError.invalid(file: file, place: "\(place(node)) mode", expected: "DCR or CRD", actual: mode)
        }
        try rearrange(node, x, split: split, perm: perm, to: [n, c / (b * b), h * b, w * b], output: out)
    }

    mutating func spaceToDepth(_ node: ONNXFile.Node) throws {
        let (x, b, out) = try blockInput(node)
        let (n, c, h, w) = (x.shape[0], x.shape[1], x.shape[2], x.shape[3])
        guard h % b == 0, w % b == 0 else {
            throw ImportError.invalid(file: file, place: "\(place(node)) blocksize", expected: "a block dividing height and width", actual: "\(b) for \(x.shape)")
        }
        let mode = string(node, "mode", "DCR")
        guard mode == "DCR" || mode == "CRD" else {
            throw ImportError.invalid(file: file, place: "\(place(node)) mode", expected: "DCR or CRD", actual: mode)
        }
        let perm = mode == "DCR" ? [0, 3, 5, 1, 2, 4] : [0, 1, 3, 5, 2, 4]
        try rearrange(node, x, split: [n, c, h / b, b, w / b, b], perm: perm, to: [n, c * b * b, h / b, w / b], output: out)
    }

    /// The (N, C, H, W) input with known C, H, W, the block size and the output name.
    private func blockInput(_ node: ONNXFile.Node) throws -> ((name: String, shape: [Int]), Int, String) {
        let x = try activation(node)
        guard x.shape.count == 4, x.shape.dropFirst().allSatisfy({ $0 > 0 }) else {
            throw ImportError.invalid(file: file, place: place(node), expected: "an (N, C, H, W) input with known C, H and W", actual: "\(x.shape)")
        }
        guard let b = node.attributes["blocksize"]?.i, b >= 1, b <= Self.maxWindow else {
            throw ImportError.invalid(file: file, place: "\(place(node)) blocksize", expected: "1…\(Self.maxWindow)",
                                      actual: node.attributes["blocksize"]?.i.map(String.init) ?? "none")
        }
        guard let out = node.outputs.first, !out.isEmpty else {
            throw ImportError.invalid(file: file, place: place(node), expected: "an output", actual: "none")
        }
        _ = try knownCount(x.shape.map { $0 * b }, node)   // the sizes below fit
        return (x, b, out)
    }

    private mutating func rearrange(_ node: ONNXFile.Node, _ x: (name: String, shape: [Int]), split: [Int], perm: [Int], to final: [Int],
                                    output out: String) throws {
        let a = fresh("\(out).split"), t = fresh("\(out).moved")
        try emitReshape("\(node.name).split", input: x.name, from: x.shape, to: split, output: a)
        emit("\(node.name).move", .transpose, [a], t, Attributes(perm: perm))
        let moved = perm.map { split[$0] }
        shapes[t] = moved
        try emitReshape("\(node.name).merge", input: t, from: moved, to: final, output: out)
    }

    mutating func tile(_ node: ONNXFile.Node) throws {
        let x = try activation(node)
        let repeats = try constant(node, 1, what: "repeats").ints
        let r = x.shape.count
        guard repeats.count == r, repeats.allSatisfy({ ($0 ?? 0) >= 1 && ($0 ?? 0) <= Self.maxTileRepeats }) else {
            throw ImportError.invalid(file: file, place: "\(place(node)) repeats", expected: "\(r) counts in 1…\(Self.maxTileRepeats)",
                                      actual: "\(repeats.map { $0.map(String.init) ?? "?" })")
        }
        guard let out = node.outputs.first, !out.isEmpty else {
            throw ImportError.invalid(file: file, place: place(node), expected: "an output", actual: "none")
        }
        let counts = repeats.map { $0 ?? 1 }   // all known (checked above)
        var current = x.name, shape = x.shape
        let axes = (0..<r).filter { counts[$0] > 1 }
        for (i, axis) in axes.enumerated() {
            let count = counts[axis]
            let next = i == axes.count - 1 ? out : fresh("\(out).axis\(axis)")
            emit("\(node.name).axis\(axis)", .concat, [String](repeating: current, count: count), next,
                 Attributes(axis: Layout.irAxis(axis, rank: r)))
            if shape[axis] >= 0 { shape[axis] = try knownCount([shape[axis], count], node) }
            shapes[next] = shape
            if axis == 0 { batchFree = false }
            current = next
        }
        if axes.isEmpty {
            emit(node.name, .identity, [x.name], out)
            shapes[out] = x.shape
        }
    }
}
