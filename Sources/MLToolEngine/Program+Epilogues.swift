import CMLToolKernels
import MLToolCore

extension Program {
    /// A GEMM layer (dense, or matMul on constant weights) whose one reader is an exact GELU (`unary` gelu), with no
    /// activation of its own and not a graph output, runs the GELU in its epilogue (`MLK_ACT_GELU`, the same bits as
    /// `mlk_gelu`) and writes the GELU's output; the GELU step goes, and the layer's own output is no longer computed.
    /// A transformer's MLP then writes its wide hidden layer once instead of writing, reading and writing it again.
    /// Only on the fast path: the reference kernels run the two steps as the graph has them.
    mutating func fuseGELUs() {
        guard purpose == .fast else { return }
        let readers = readersOfValues()
        let outputIds = Set(outputs.compactMap { ids[$0] })
        var gone = Set<Int>()
        for i in steps.indices {
            let s = steps[i]
            guard Fast.runsOnGemm(s), s.act.isNone, !outputIds.contains(s.output), let r = readers[s.output], r.count == 1,
                  steps[r[0]].op == .unary, steps[r[0]].unary == .gelu, steps[r[0]].inputs == [s.output] else { continue }
            steps[i].act = Act(code: Int32(MLK_ACT_GELU))
            steps[i].output = steps[r[0]].output
            gone.insert(r[0])
        }
        if !gone.isEmpty { dropSteps(gone) }
    }

    /// The steps reading each value (a step once, however many of its inputs the value is).
    func readersOfValues() -> [Int: [Int]] {
        var readers: [Int: [Int]] = [:]
        for (i, s) in steps.enumerated() {
            for v in Set(s.inputs) { readers[v, default: []].append(i) }
        }
        return readers
    }

    /// Removes the steps at `gone` (a pass folded them into others) and rebuilds `producer`.
    mutating func dropSteps(_ gone: Set<Int>) {
        steps = steps.enumerated().filter { !gone.contains($0.offset) }.map(\.element)
        producer = [:]
        for (i, s) in steps.enumerated() { producer[s.output] = i }
    }
}
