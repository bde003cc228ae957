import MLToolCore

/// How one chunk (an image, or the whole batch when the graph mixes images) runs: the value shapes, and a slot
/// of the activation arena for every runtime value, reused once the value is dead.
struct Plan: Sendable {
    var steps: [Int]
    var shapes: [Int: [Int]]
    /// Arena slot of each runtime value (graph inputs and step outputs; constants have none).
    var slot: [Int: Int] = [:]
    var slotSizes: [Int] = []
    var scratch = 0

    init(program p: Program, inputShapes: [Int: [Int]], steps: [Int], targets: [Int]) throws {
        self.steps = steps
        shapes = try p.shapes(inputs: inputShapes, steps: steps)
        var lastUse: [Int: Int] = [:]
        for (pos, i) in steps.enumerated() { for v in p.steps[i].inputs { lastUse[v] = pos } }
        for t in targets { lastUse[t] = Int.max }
        var free: [Int] = []
        func take(_ v: Int) {
            let need = shapes[v]!.reduce(1, *)
            // Best fit among the free slots; else grow the largest free one; else a new slot.
            let fits = free.filter { slotSizes[$0] >= need }
            let pick = fits.min { slotSizes[$0] < slotSizes[$1] } ?? free.max { slotSizes[$0] < slotSizes[$1] }
            if let s = pick {
                free.removeAll { $0 == s }
                slotSizes[s] = max(slotSizes[s], need)
                slot[v] = s
            } else {
                slot[v] = slotSizes.count
                slotSizes.append(need)
            }
        }
        for v in p.inputIds { take(v) }
        for v in p.inputIds where lastUse[v] == nil { free.append(slot[v]!) }
        for (pos, i) in steps.enumerated() {
            let s = p.steps[i]
            take(s.output)
            let xs = s.inputs.map { shapes[$0]! }
            scratch = max(scratch, Fast.scratchCount(s, xs, shapes[s.output]!))
            for v in Set(s.inputs) where lastUse[v] == pos && p.constants[v] == nil { free.append(slot[v]!) }
            if lastUse[s.output] == nil { free.append(slot[s.output]!) }
        }
    }
}

/// The memory one worker runs a plan in: slots allocated once, and each step's pointers resolved in advance so the
/// hot loop neither allocates nor looks anything up.
final class Arena: @unchecked Sendable {
    let slots: [Buffer]
    let scratch: Buffer
    let inputs: [[UnsafePointer<Float>]]
    let inputShapes: [[[Int]]]
    let outputs: [UnsafeMutablePointer<Float>]
    let outputShapes: [[Int]]

    init(plan: Plan, program p: Program) {
        let slots = plan.slotSizes.map { Buffer(count: $0) }
        self.slots = slots
        scratch = Buffer(count: plan.scratch)
        func pointer(_ v: Int) -> UnsafeMutablePointer<Float> { p.constants[v]?.pointer ?? slots[plan.slot[v]!].pointer }
        inputs = plan.steps.map { p.steps[$0].inputs.map { UnsafePointer(pointer($0)) } }
        inputShapes = plan.steps.map { p.steps[$0].inputs.map { plan.shapes[$0]! } }
        outputs = plan.steps.map { pointer(p.steps[$0].output) }
        outputShapes = plan.steps.map { plan.shapes[p.steps[$0].output]! }
    }

    /// The storage of value `v`.
    func pointer(_ v: Int, _ plan: Plan, _ p: Program) -> UnsafeMutablePointer<Float> {
        p.constants[v]?.pointer ?? slots[plan.slot[v]!].pointer
    }

    /// Runs every step of the plan on what the input slots hold.
    /// `threads` > 1 splits single large ops across threads (used when one worker runs the whole batch).
    func run(_ plan: Plan, _ p: Program, threads: Int) {
        for (pos, i) in plan.steps.enumerated() {
            Fast.run(p.steps[i], inputs[pos], inputShapes[pos], outputs[pos], outputShapes[pos], scratch: scratch.pointer,
                     threads: threads)
        }
    }
}
