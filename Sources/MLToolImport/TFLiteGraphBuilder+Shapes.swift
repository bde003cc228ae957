import MLToolCore

/// Converters of TFLite's shape and data-movement ops (their parameters must be constants).
extension TFLiteGraphBuilder {
    /// `axis` (negative counts from the end) checked against `rank`.
    func axis(_ axis: Int, rank: Int, _ c: TFLiteCall) throws -> Int {
        let a = axis < 0 ? axis + rank : axis
        guard a >= 0, a < rank else {
            throw ImportError.invalid(file: file, place: c.place("axis"), expected: "an axis of a rank-\(rank) tensor", actual: "\(axis)")
        }
        return a
    }

    /// RESHAPE: the target from input 1 (a constant), else ReshapeOptions.new_shape, else the output's shape.
    mutating func reshape(_ c: TFLiteCall) throws {
        let x = try input(try c.input(0, self))
        var target: [Int]
        if let s = try c.optionalInput(1, self) {
            target = try ints(s, "RESHAPE shape")
        } else if let t = c.options, let v = try tfl.flat.int32s(t, 0, "new_shape") {
            target = v.map(Int.init)
        } else {
            target = shape(try out(c))
        }
        // TFLite has no "copy this dimension": a 0 is a size; the IR reads 0 as a copy, so take the output's shape.
        if target.contains(0) { target = shape(try out(c)) }
        emit(c.node, .reshape, [x], output: c.output, Attributes(shape: target))
    }

    /// CONCATENATION [axis, activation].
    mutating func concatenation(_ c: TFLiteCall) throws {
        let xs = try c.inputs.indices.map { try c.input($0, self) }
        guard let first = xs.first else {
            throw ImportError.invalid(file: file, place: c.place("inputs"), expected: "at least one tensor", actual: "none")
        }
        let rank = shape(first).count
        let a = try axis(try optionInt(c, 0, "axis"), rank: rank, c)
        let names = try xs.map { try input($0) }
        emit(c, .concat, names, Attributes(axis: a), activation: try fusedActivation(c, 1))
    }

    /// PAD, PADV2: paddings (rank, 2) → the IR's begins then ends; PADV2's constant value.
    mutating func pad(_ c: TFLiteCall) throws {
        let x = try c.input(0, self)
        let p = try ints(try c.input(1, self), "PAD paddings")
        let rank = shape(x).count
        guard p.count == 2 * rank, p.allSatisfy({ $0 >= 0 }) else {
            throw ImportError.invalid(file: file, place: c.place("paddings"), expected: "\(rank) × 2 values ≥ 0", actual: "\(p)")
        }
        var value: Float = 0
        if let v = try c.optionalInput(2, self) {
            let values = try constant(v, "PADV2 constant_values")
            guard values.count == 1 else {
                throw ImportError.invalid(file: file, place: c.place("constant_values"), expected: "one value", actual: "\(values.count)")
            }
            value = values[0]
        }
        let pads = stride(from: 0, to: p.count, by: 2).map { p[$0] } + stride(from: 1, to: p.count, by: 2).map { p[$0] }
        emit(c.node, .pad, [try input(x)], output: c.output, Attributes(pads: pads, value: value, mode: "constant"))
    }

    /// MEAN: axes (a constant), keep_dims (ReducerOptions 0); without keep_dims the result takes the output's shape.
    mutating func mean(_ c: TFLiteCall) throws {
        let x = try c.input(0, self)
        let rank = shape(x).count
        let axes = try Set(ints(try c.input(1, self), "MEAN axes").map { try axis($0, rank: rank, c) }).sorted()
        let keep = try optionBool(c, 0, "keep_dims")
        if keep {
            emit(c.node, .reduce, [try input(x)], output: c.output, Attributes(axes: axes, mode: ReduceFunction.mean.rawValue))
        } else {
            let kept = fresh(c.output, "kept")
            emit(c.node, .reduce, [try input(x)], output: kept, Attributes(axes: axes, mode: ReduceFunction.mean.rawValue))
            emit(c.node + ".reshape", .reshape, [kept], output: c.output, Attributes(shape: shape(try out(c))))
        }
    }

    /// RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR: size (a constant (OH, OW)); align_corners and half_pixel_centers
    /// map to the IR's coordinate modes (TFLite's nearest with half-pixel centers takes ⌊(o + ½)·in/out⌋: ONNX's
    /// half_pixel with round_prefer_ceil; with align_corners it rounds halves up; else it floors).
    mutating func resize(_ c: TFLiteCall, bilinear: Bool) throws {
        let (x, _) = try shape4(c, 0)
        let size = try ints(try c.input(1, self), "\(c.opName) size")
        guard size.count == 2, size.allSatisfy({ $0 > 0 }) else {
            throw ImportError.invalid(file: file, place: c.place("size"), expected: "two sizes > 0", actual: "\(size)")
        }
        let align = try optionBool(c, bilinear ? 2 : 0, "align_corners")
        let half = try optionBool(c, bilinear ? 3 : 1, "half_pixel_centers")
        let coordinate = align ? "align_corners" : half ? "half_pixel" : "asymmetric"
        emit(c.node, .resize, [try input(x)], output: c.output,
             Attributes(shape: size, mode: bilinear ? "linear" : "nearest", coordinateMode: coordinate,
                        nearestMode: bilinear ? nil : align || half ? "round_prefer_ceil" : "floor"))
    }

    /// TRANSPOSE: perm (a constant).
    mutating func transpose(_ c: TFLiteCall) throws {
        let x = try c.input(0, self)
        let perm = try ints(try c.input(1, self), "TRANSPOSE perm")
        guard perm.sorted() == Array(0..<shape(x).count) else {
            throw ImportError.invalid(file: file, place: c.place("perm"), expected: "a permutation of 0..<\(shape(x).count)", actual: "\(perm)")
        }
        emit(c.node, .transpose, [try input(x)], output: c.output, Attributes(perm: perm))
    }

    /// DEPTH_TO_SPACE (DepthToSpaceOptions: block_size 0) on NHWC: output[n, h·b + i, w·b + j, c] = input[n, h, w,
    /// (i·b + j)·C' + c], as reshape (n, h, w, b, b, C') → transpose (0, 1, 3, 2, 4, 5) → reshape (n, h·b, w·b, C').
    mutating func depthToSpace(_ c: TFLiteCall) throws {
        let x = try c.input(0, self)
        let s = shape(x), b = try optionInt(c, 0, "block_size")
        guard s.count == 4, s.dropFirst().allSatisfy({ $0 > 0 }), b >= 1, b <= 64, s[3] % (b * b) == 0 else {
            throw ImportError.invalid(file: file, place: c.place("block_size"),
                                      expected: "a block whose square divides the channels of a known (N, H, W, C) input",
                                      actual: "\(b) for \(s)")
        }
        let (n, h, w, ch) = (s[0] < 0 ? -1 : s[0], s[1], s[2], s[3] / (b * b))
        let split = fresh(c.output, "split"), moved = fresh(c.output, "moved")
        emit("\(c.node).split", .reshape, [try input(x)], output: split, Attributes(shape: [n, h, w, b, b, ch]))
        emit("\(c.node).move", .transpose, [split], output: moved, Attributes(perm: [0, 1, 3, 2, 4, 5]))
        emit(c.node, .reshape, [moved], output: c.output, Attributes(shape: [n, h * b, w * b, ch]))
    }

    /// SQUEEZE: squeeze_dims (SqueezeOptions 0), or every axis of size 1.
    mutating func squeeze(_ c: TFLiteCall) throws {
        let x = try c.input(0, self)
        let s = shape(x)
        let dims = try c.options.flatMap { try tfl.flat.int32s($0, 0, "squeeze_dims") }?.map(Int.init) ?? []
        let axes = dims.isEmpty ? s.indices.filter { s[$0] == 1 } : try Set(dims.map { try axis($0, rank: s.count, c) }).sorted()
        emit(c.node, .squeeze, [try input(x)], output: c.output, Attributes(axes: axes))
    }

    /// SLICE: begin and size (constants; a size of −1 runs to the end).
    mutating func slice(_ c: TFLiteCall) throws {
        let x = try c.input(0, self)
        let s = shape(x)
        let begin = try ints(try c.input(1, self), "SLICE begin"), size = try ints(try c.input(2, self), "SLICE size")
        guard begin.count == s.count, size.count == s.count, s.allSatisfy({ $0 >= 0 }) else {
            throw ImportError.invalid(file: file, place: c.place("begin/size"), expected: "\(s.count) values each on a known shape",
                                      actual: "begin \(begin), size \(size), input \(s)")
        }
        var axes: [Int] = [], starts: [Int] = [], counts: [Int] = []
        for a in s.indices {
            let count = size[a] == -1 ? s[a] - begin[a] : size[a]
            guard begin[a] >= 0, count >= 1, begin[a] + count <= s[a] else {
                throw ImportError.invalid(file: file, place: c.place("axis \(a)"), expected: "a non-empty slice inside \(s[a])",
                                          actual: "begin \(begin[a]), size \(size[a])")
            }
            if begin[a] != 0 || count != s[a] { axes.append(a); starts.append(begin[a]); counts.append(count) }
        }
        emit(c.node, .slice, [try input(x)], output: c.output,
             Attributes(axes: axes, starts: starts, steps: axes.map { _ in 1 }, counts: counts))
    }

    /// STRIDED_SLICE: begin, end, strides (constants) with begin/end/shrink-axis masks and `offset`; ellipsis and
    /// new-axis masks are refused. Shrunk axes are reshaped away to the output's shape.
    mutating func stridedSlice(_ c: TFLiteCall) throws {
        let x = try c.input(0, self)
        let s = shape(x)
        let begin = try ints(try c.input(1, self), "STRIDED_SLICE begin"), end = try ints(try c.input(2, self), "STRIDED_SLICE end")
        let steps = try c.optionalInput(3, self).map { try ints($0, "STRIDED_SLICE strides") } ?? begin.map { _ in 1 }
        let beginMask = try optionInt(c, 0, "begin_mask"), endMask = try optionInt(c, 1, "end_mask")
        let shrinkMask = try optionInt(c, 4, "shrink_axis_mask")
        let offset = try optionBool(c, 5, "offset")
        guard try optionInt(c, 2, "ellipsis_mask") == 0, try optionInt(c, 3, "new_axis_mask") == 0 else {
            throw ImportError.unsupported(file: file, ops: [.init(op: "STRIDED_SLICE with an ellipsis or new-axis mask", count: 1, firstNodes: [c.node])])
        }
        guard begin.count == end.count, steps.count == begin.count, begin.count <= s.count, s.allSatisfy({ $0 >= 0 }) else {
            throw ImportError.invalid(file: file, place: c.place("begin/end/strides"), expected: "at most \(s.count) values each, on a known shape",
                                      actual: "begin \(begin), end \(end), strides \(steps), input \(s)")
        }
        var axes: [Int] = [], starts: [Int] = [], counts: [Int] = [], strides: [Int] = []
        var result = s
        for a in begin.indices {
            let n = s[a], step = steps[a]
            guard step != 0 else {
                throw ImportError.invalid(file: file, place: c.place("strides"), expected: "non-zero strides", actual: "\(steps)")
            }
            func clamp(_ v: Int) -> Int { step > 0 ? min(max(v, 0), n) : min(max(v, -1), n - 1) }
            let b = begin[a] < 0 ? begin[a] + n : begin[a]
            var start = beginMask >> a & 1 == 1 ? (step > 0 ? 0 : n - 1) : clamp(b)
            var stop = offset ? clamp(b + end[a]) : endMask >> a & 1 == 1 ? (step > 0 ? n : -1) : clamp(end[a] < 0 ? end[a] + n : end[a])
            if shrinkMask >> a & 1 == 1 { start = b; stop = b + 1 }
            let count = step > 0 ? (stop - start + step - 1) / step : (start - stop - step - 1) / -step
            guard count >= 1, start >= 0, start < n else {
                throw ImportError.invalid(file: file, place: c.place("axis \(a)"), expected: "a non-empty slice of \(n)",
                                          actual: "begin \(begin[a]), end \(end[a]), stride \(step)")
            }
            if start != 0 || count != n || step != 1 { axes.append(a); starts.append(start); counts.append(count); strides.append(step) }
            result[a] = count
        }
        let shrunk = s.indices.filter { !($0 < begin.count && shrinkMask >> $0 & 1 == 1) }.map { result[$0] }
        let sliced = shrinkMask == 0 ? c.output : fresh(c.output, "sliced")
        emit(c.node, .slice, [try input(x)], output: sliced, Attributes(axes: axes, starts: starts, steps: strides, counts: counts))
        if shrinkMask != 0 {
            emit(c.node + ".shrink", .reshape, [sliced], output: c.output, Attributes(shape: shrunk))
        }
    }
}
