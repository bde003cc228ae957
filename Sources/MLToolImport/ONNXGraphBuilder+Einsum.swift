import MLToolCore

/// Einsum as transposes, reshapes and one `batchMatMul`: the equations of attention and bilinear layers
/// (`bij,bjk->bik`, `bhid,bhjd->bhij`, `ij,jk->ik`, `...` ellipses) and single-operand permutations (`ij->ji`).
/// Each label of two operands is a batch axis (in both and in the output), contracted (in both, not in the
/// output) or free (in one and in the output). Other equations (a label repeated in one operand, a sum over an axis
/// of one operand, three or more operands) are refused naming the equation.
extension ONNXGraphBuilder {
    typealias EinsumOperand = (name: String, shape: [Int], plain: Bool)

    mutating func einsum(_ node: ONNXFile.Node) throws {
        let refuse = einsumRefusal(node)
        guard let out = node.outputs.first, !out.isEmpty else { throw refuse("no output") }
        let text = string(node, "equation", "").filter { !$0.isWhitespace }
        let sides = text.components(separatedBy: "->")
        guard sides.count <= 2 else { throw refuse("one '->'") }
        let terms = sides[0].split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        guard terms.count == node.inputs.count, (1...2).contains(terms.count) else { throw refuse("one or two operands") }
        // Operands in ONNX order: their IR names, ONNX shapes and whether they are constants (stored as they are).
        var operands: [EinsumOperand] = []
        for (i, name) in node.inputs.enumerated() {
            if let c = constants[name] {
                operands.append((addWeight(name, c), c.shape, true))
            } else {
                let a = try activation(node, i)
                operands.append((a.name, a.shape, false))
            }
        }
        let (labels, generated) = try Self.einsumLabels(terms, operands, node, refuse)
        // Sizes per label (a batch label may broadcast from 1).
        var size: [Character: Int] = [:]
        for (l, o) in zip(labels, operands) {
            for (c, d) in zip(l, o.shape) {
                if let s = size[c], s != d, s != 1, d != 1, s >= 0, d >= 0 { throw refuse("label '\(c)' of one size, not \(s) and \(d)") }
                if size[c] == nil || size[c] == 1 || size[c] == -1 { size[c] = d }
            }
        }
        var output: [Character]
        if sides.count == 2 {
            let p = try Self.einsumLetters(sides[1], refuse)
            output = p.before + (p.ellipsis ? generated : []) + p.after
        } else {
            // Implicit output: the ellipsis axes, then the labels used once, alphabetically.
            let all = labels.joined().filter { $0.isLetter }
            output = generated + Set(all).filter { c in all.filter { $0 == c }.count == 1 }.sorted()
        }
        guard Set(output).count == output.count, output.allSatisfy({ size[$0] != nil }) else { throw refuse("output labels once each, from the operands") }
        if labels.count == 1 {
            guard Set(labels[0]) == Set(output) else { throw refuse("a one-operand equation that only permutes (no sum, no diagonal)") }
            emitEinsumTranspose(node.name, operands[0], labels[0], to: output, output: out, result: true)
        } else {
            try einsumProduct(node, operands, labels, output: output, size: size, out: out, refuse)
        }
        shapes[out] = output.map { size[$0] ?? -1 }
    }

    /// The refusal of `node`'s equation, saying why.
    private func einsumRefusal(_ node: ONNXFile.Node) -> (String) -> ImportError {
        let (path, site, equation) = (file, place(node), string(node, "equation", ""))
        return { why in
            .invalid(file: path, place: "\(site) equation", expected: "an equation of one permuted operand or a batched product (\(why))",
                     actual: "'\(equation)'")
        }
    }

    /// A term's labels before and after its "...", if it has one.
    private static func einsumLetters(_ term: String, _ refuse: (String) -> ImportError) throws
        -> (before: [Character], after: [Character], ellipsis: Bool) {
        let pieces = term.components(separatedBy: "...")
        guard pieces.count <= 2, pieces.joined().allSatisfy({ $0.isLetter && $0.isASCII }) else { throw refuse("letters and at most one '...' per term") }
        return (Array(pieces[0]), pieces.count == 2 ? Array(pieces[1]) : [], pieces.count == 2)
    }

    /// Labels per operand, "..." expanded to generated labels (right-aligned across operands, as numpy does); the
    /// generated labels.
    private static func einsumLabels(_ terms: [String], _ operands: [EinsumOperand], _ node: ONNXFile.Node,
                                     _ refuse: (String) -> ImportError) throws -> (labels: [[Character]], generated: [Character]) {
        let parsed = try terms.map { try einsumLetters($0, refuse) }
        var ellipsisRank = 0
        for (i, (p, o)) in zip(parsed, operands).enumerated() {
            let named = p.before.count + p.after.count
            guard p.ellipsis ? o.shape.count >= named : o.shape.count == named else {
                throw refuse("operand '\(node.inputs[i])' of shape \(o.shape) fitting its term")
            }
            if p.ellipsis { ellipsisRank = max(ellipsisRank, o.shape.count - named) }
        }
        let generated = (0..<ellipsisRank).map { Character(UnicodeScalar(UInt8(48 + $0))) }   // "0", "1", … never letters
        var labels: [[Character]] = []
        for (p, o) in zip(parsed, operands) {
            let e = p.ellipsis ? o.shape.count - p.before.count - p.after.count : 0
            labels.append(p.before + generated.suffix(e) + p.after)
        }
        for l in labels where Set(l).count != l.count { throw refuse("no label repeated within an operand (a diagonal)") }
        return (labels, generated)
    }

    /// Two operands: A as (batch…, M, K) times B as (batch…, K, N), then the product unflattened and ordered as the
    /// output.
    private mutating func einsumProduct(_ node: ONNXFile.Node, _ operands: [EinsumOperand], _ labels: [[Character]], output: [Character],
                                        size: [Character: Int], out: String, _ refuse: (String) -> ImportError) throws {
        let (la, lb) = (labels[0], labels[1])
        let batch = output.filter { la.contains($0) && lb.contains($0) }
        let contracted = la.filter { lb.contains($0) && !output.contains($0) }
        let freeA = output.filter { la.contains($0) && !lb.contains($0) }, freeB = output.filter { lb.contains($0) && !la.contains($0) }
        guard la.allSatisfy({ output.contains($0) || lb.contains($0) }), lb.allSatisfy({ output.contains($0) || la.contains($0) }) else {
            throw refuse("every label in the output or in both operands (no sum over an axis of one operand)")
        }
        // A: batch, free, contracted → (batch…, M, K); B: batch, contracted, free → (batch…, K, N).
        func known(_ labels: [Character], _ what: String) throws -> Int {
            let n = Self.product(ArraySlice(labels.map { size[$0] ?? -1 }))   // -1 when one is unknown
            guard n != Int.max else { throw refuse("\(what) axes whose size fits") }
            return n
        }
        let m = try known(freeA, "free"), n = try known(freeB, "free")
        let k = try known(contracted, "contracted")
        let a3 = fresh("\(out).a"), b3 = fresh("\(out).b")
        let aShape = batch.map { c in la.firstIndex(of: c).map { operands[0].shape[$0] } ?? 1 } + [m, k]
        let bShape = batch.map { c in lb.firstIndex(of: c).map { operands[1].shape[$0] } ?? 1 } + [k, n]
        try emitEinsumOperand("\(node.name).a", operands[0], la, order: batch + freeA + contracted, shape: aShape,
                              firstCopies: !batch.isEmpty || freeA.count == 1, output: a3)
        try emitEinsumOperand("\(node.name).b", operands[1], lb, order: batch + contracted + freeB, shape: bShape,
                              firstCopies: !batch.isEmpty || contracted.count == 1, output: b3)
        let product = fresh("\(out).product")
        emit(node.name, .batchMatMul, [a3, b3], product)
        let grouped = batch + freeA + freeB
        let unflat = fresh("\(out).unflat")
        let unflatShape = grouped.map { size[$0] ?? -1 }
        let copies = !batch.isEmpty || freeA.count == 1
        emit("\(node.name).unflat", .reshape, [product], unflat, Attributes(shape: try reshapeTarget(unflatShape, firstCopies: copies, refuse)))
        emitEinsumTranspose("\(node.name).out", (unflat, unflatShape, true), grouped, to: output, output: out, result: true)
        if batch.first != output.first || batch.first != la.first || batch.first != lb.first { batchFree = false }
    }

    /// An IR reshape target: one unknown size as -1 (inferred); with more, the first as 0 ("copy the input's") when
    /// the source's first axis is that same axis (`firstCopies`).
    private func reshapeTarget(_ dims: [Int], firstCopies: Bool, _ refuse: (String) -> ImportError) throws -> [Int] {
        var t = dims.map { $0 < 0 ? -1 : $0 }
        if t.filter({ $0 < 0 }).count > 1, firstCopies, t.first == -1 { t[0] = 0 }
        guard t.filter({ $0 < 0 }).count <= 1 else { throw refuse("at most one axis group of unknown size") }
        return t
    }

    /// `x` (labels `have`) transposed to `order` and reshaped to `shape` (batch…, rows, columns).
    private mutating func emitEinsumOperand(_ name: String, _ x: (name: String, shape: [Int], plain: Bool), _ have: [Character],
                                            order: [Character], shape: [Int], firstCopies: Bool, output: String) throws {
        let t = fresh("\(output).ordered")
        let ordered = order.map { c in x.shape[have.firstIndex(of: c)!] }
        emitEinsumTranspose("\(name).order", x, have, to: order, output: t, result: false)
        let target = try reshapeTarget(shape, firstCopies: firstCopies) { why in
            ImportError.invalid(file: file, place: "node '\(name)'", expected: why, actual: "\(ordered)")
        }
        emit("\(name).flat", .reshape, [t], output, Attributes(shape: target))
    }

    /// `x` (labels `have`, ONNX order; an activation of rank 4 is NHWC in the IR, `plain` ones and constants are
    /// not) permuted to labels `want`: plain row-major, or NHWC when it is the node's `result` of rank 4.
    private mutating func emitEinsumTranspose(_ name: String, _ x: (name: String, shape: [Int], plain: Bool), _ have: [Character],
                                              to want: [Character], output: String, result: Bool) {
        // IR axis of each ONNX axis of x.
        let irOf: (Int) -> Int = { a in x.shape.count == 4 && !x.plain ? Layout.irAxis(a, rank: 4) : a }
        let wantIR = result && want.count == 4 ? Layout.toNHWC.map { want[$0] } : want
        let perm = wantIR.map { c in irOf(have.firstIndex(of: c)!) }
        if perm == Array(0..<perm.count) {
            emit(name, .identity, [x.name], output)
        } else {
            emit(name, .transpose, [x.name], output, Attributes(perm: perm))
        }
    }
}
