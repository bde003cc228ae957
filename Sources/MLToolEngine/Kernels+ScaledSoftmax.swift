import CMLToolKernels
import MLToolCore

/// Attention scores as exports spell them, softmax(x / √d + mask) along the keys: three steps (a div by one constant,
/// an add of a mask broadcast along the rows, a softmax on the last axis) that `Plan` runs as one
/// (`mlk_softmax_row_scaled`, a row at a time), never writing the quotient or the sum. Each row gets the bits the
/// three steps give: the quotient and the sum rounded as those steps round them, then the softmax's definition.
enum ScaledSoftmax {
    /// Where the fused run finds its operands: the divisor's value and the index in the add's inputs of the mask.
    struct Match: Sendable {
        let divisor: Float
        let addend: Int
    }

    /// The match of steps `s` (div, add, softmax, at positions pos…pos + 2), nil when they do not fuse: the quotient
    /// and the sum each read only by the next step, the mask's last axis the rows' length and its others 1 or x's.
    static func match(_ s: [Step], _ p: Program, shapes: [Int: [Int]], lastUse: [Int: Int], at pos: Int) -> Match? {
        guard s.count == 3, s[0].op == .div, s[1].op == .add, s[2].op == .softmax, s[0].inputs.count == 2,
              s[1].inputs.count == 2, s[2].inputs == [s[1].output], s[0].act.isNone, s[1].act.isNone, s[2].act.isNone,
              p.constants[s[0].inputs[0]] == nil, let d = p.constants[s[0].inputs[1]], d.count == 1,
              let xs = shapes[s[0].inputs[0]], let len = xs.last, len > 0, shapes[s[0].output] == xs,
              shapes[s[1].output] == xs, lastUse[s[0].output] == pos + 1, lastUse[s[1].output] == pos + 2,
              let axis = try? Program.axis(s[2].axis ?? -1, rank: xs.count, s[2]), axis == xs.count - 1,
              let other = s[1].inputs.firstIndex(where: { $0 != s[0].output }), s[1].inputs.contains(s[0].output),
              let ms = shapes[s[1].inputs[other]], ms.count <= xs.count, ms.last == len,
              zip(ms.reversed(), xs.reversed()).allSatisfy({ $0 == 1 || $0 == $1 }) else { return nil }
        return Match(divisor: d.pointer[0], addend: other)
    }

    /// y = softmax(x / divisor + m) along x's last axis, m broadcast to x's shape; rows split across threads.
    static func run(_ f: Match, _ x: UnsafePointer<Float>, _ xs: [Int], mask m: UnsafePointer<Float>, _ ms: [Int],
                    _ y: UnsafeMutablePointer<Float>, threads: Int) {
        guard let len = xs.last, len > 0 else { return }
        let rows = xs.dropLast().reduce(1, &*), strides = Fast.broadcastStrides(ms, rank: xs.count)
        nonisolated(unsafe) let (x, m, y) = (x, m, y)
        let divisor = f.divisor
        Fast.rowsInParallel(rows, elements: rows &* len, threads: threads) { lo, hi in
            Fast.forEachRow(xs, [strides], rows: lo..<hi) { r, off in
                mlk_softmax_row_scaled(x + r &* len, y + r &* len, Int64(len), divisor, m + off[0])
            }
        }
    }
}
