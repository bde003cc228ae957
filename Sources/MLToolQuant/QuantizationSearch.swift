import Foundation
import MLToolCore

/// What the size-budget and accuracy-gate searches ask about candidate models. The quantize pipeline (in MLTool)
/// answers with the engine, the calibration images and the evaluation data, so this module needs Core alone.
public protocol QuantizationJudge {
    /// What measuring a model gives (accuracy, agreement, …); the searches read only its `drop`.
    associatedtype Verdict
    /// The float model quantized with `options`, with whatever the pipeline adds (bias correction).
    func compress(_ options: QuantizeOptions) throws -> (Model, [TensorQuantReport])
    /// The size of `model` as a file, in bytes.
    func fileBytes(_ model: Model) throws -> Int
    /// The images `sensitivity` is measured on, for messages ("holdout"); nil when it cannot be measured.
    var sensitivitySource: String? { get }
    /// How much quantizing each of `tensors` alone changes the outputs (larger: more sensitive).
    func sensitivity(_ quantized: Model, tensors: [String]) throws -> [String: Double]
    /// Measures `model` against the float model.
    func verdict(_ model: Model) throws -> Verdict
    /// Accuracy lost, in percentage points.
    func drop(_ verdict: Verdict) -> Double
    /// A line of progress for the user.
    func status(_ message: String)
}

/// The two searches over per-tensor bit widths that follow a first compression: fill a byte budget with the most
/// sensitive tensors (mixed precision), and back off tensors until an accuracy gate holds.
public enum QuantizationSearch {
    /// The state of a search: the quantized model, its per-tensor reports and the options that made it.
    public struct State {
        public var model: Model
        public var reports: [TensorQuantReport]
        public var options: QuantizeOptions
        public init(model: Model, reports: [TensorQuantReport], options: QuantizeOptions) {
            self.model = model; self.reports = reports; self.options = options
        }
    }

    /// Raises the most sensitive tensors per byte (`MixedPrecision.allocate`) while the file, now `size` bytes,
    /// stays within `budget` bytes. Returns the raised tensors with their bits (empty: nothing fitted) and the new
    /// state. Needs the judge's sensitivity.
    public static func fillBudget<J: QuantizationJudge>(_ state: State, size: Int, budget: Int, judge: J) throws -> (State, [String: Int]) {
        let bits = state.options.bits
        guard size < budget, let source = judge.sensitivitySource else { return (state, [:]) }
        let names = state.reports.filter { $0.skipped == nil }.map(\.name)
        judge.status("size budget: measuring the sensitivity of \(names.count) tensors on \(source)")
        let kl = try judge.sensitivity(state.model, tensors: names)
        let q = state.model.tensorsByName
        let candidates = names.map { n in
            MixedPrecision.Candidate(name: n, elements: q[n]?.elementCount ?? 0,
                                     tables: max(1, (q[n]?.quant?.lut?.count ?? 0) >> bits), sensitivity: kl[n] ?? 0)
        }
        var room = budget - size
        while room > 0 {
            let levels = MixedPrecision.allocate(candidates, bits: bits, room: room)
            guard !levels.isEmpty else { break }
            var o = state.options
            for (n, b) in levels { o.bitsOverride[n] = b }
            let (model, reports) = try judge.compress(o)
            let s2 = try judge.fileBytes(model)
            // The byte estimate ignores alignment and metadata; when it falls short, shrink the room and retry.
            guard s2 <= budget else { room -= s2 - budget + 64; continue }
            return (State(model: model, reports: reports, options: o), levels)
        }
        return (state, [:])
    }

    /// The outcome of `backOff`.
    public struct BackOff<Verdict> {
        public var state: State
        public var verdict: Verdict
        /// "name → 6 bits" / "name → float", in the order they were raised.
        public var backedOff: [String]
        /// How the tensors were ranked ("worst SNR first", "largest output change … first").
        public var order: String
    }

    /// Raises the worst tensors to the next width of the mode's ladder (`Mode.nextBits`), an eighth of the
    /// candidates at a time, until the drop is at most `maxDrop`. Worst: the largest output change when quantized
    /// alone, when the judge can measure it, else the lowest weight SNR. Throws `QuantError.gateFailed` when even
    /// every tensor backed off leaves the drop too large.
    public static func backOff<J: QuantizationJudge>(_ state: State, verdict: J.Verdict, maxDrop: Double,
                                                     judge: J) throws -> BackOff<J.Verdict> {
        var state = state, verdict = verdict
        let bits = state.options.bits, mode = state.options.mode
        var order = state.reports.filter { $0.skipped == nil }.sorted { ($0.snrDB ?? .infinity) < ($1.snrDB ?? .infinity) }
        var orderName = "worst SNR first"
        if let source = judge.sensitivitySource, judge.drop(verdict) > maxDrop {
            judge.status("gate: measuring the sensitivity of \(order.count) tensors on \(source)")
            let kl = try judge.sensitivity(state.model, tensors: order.map(\.name))
            order.sort { (kl[$0.name] ?? 0) > (kl[$1.name] ?? 0) }
            orderName = "largest output change on \(source) first"
        }
        var backedOff = [String]()
        while judge.drop(verdict) > maxDrop {
            guard !order.isEmpty else { throw QuantError.gateFailed(drop: judge.drop(verdict), maxDrop: maxDrop) }
            let step = max(1, order.count / 8)
            for r in order.prefix(step) {
                let next = mode.nextBits(after: state.options.bitsOverride[r.name] ?? bits)
                state.options.bitsOverride[r.name] = next
                backedOff.append("\(r.name) → \(next >= 32 ? "float" : "\(next) bits")")
            }
            order = Array(order.dropFirst(step)).filter { (state.options.bitsOverride[$0.name] ?? bits) < 32 }
            (state.model, state.reports) = try judge.compress(state.options)
            verdict = try judge.verdict(state.model)
            judge.status(String(format: "gate: backed off %d tensors, drop now %.2f points", backedOff.count, judge.drop(verdict)))
        }
        return BackOff(state: state, verdict: verdict, backedOff: backedOff, order: orderName)
    }
}
