/// Runs L-BFGS with a strong-Wolfe line search on a `SoftmaxObjective`, scoring a validation split each iteration
/// for progress, early stopping and the `.auto` L2 search.
struct SoftmaxTrainer<Matrix: FeatureMatrix> {
    var objective: SoftmaxObjective<Matrix>
    /// Unweighted, unregularised: its loss is the validation log-loss.
    let validation: SoftmaxObjective<Matrix>?
    let options: LogisticRegressionOptions
    let start: ContinuousClock.Instant
    let progress: ((IterationRecord) -> Void)?

    struct Point {
        var theta: [Float]
        var gradient: [Float]
        var loss: Double
        var correct: Int
    }

    struct Outcome {
        var theta: [Float]
        var stopReason: StopReason
        var iterations: Int
        var trainAccuracy: Double
        var validationAccuracy: Double?
        var validationLoss: Double?
    }

    func evaluate(_ theta: [Float]) -> Point {
        var g = [Float](repeating: 0, count: theta.count)
        let e = theta.withUnsafeBufferPointer { t in
            g.withUnsafeMutableBufferPointer { objective.evaluate(t.baseAddress!, gradient: $0.baseAddress!) }
        }
        return Point(theta: theta, gradient: g, loss: e.loss, correct: e.correct)
    }

    /// (log-loss, accuracy) of θ on the validation split.
    func score(_ theta: [Float]) -> (loss: Double, accuracy: Double)? {
        guard let validation else { return nil }
        let e = theta.withUnsafeBufferPointer { validation.evaluate($0.baseAddress!, gradient: nil) }
        return (e.loss, Double(e.correct) / Double(validation.matrix.rows))
    }

    /// Minimises J for `objective.l2` from `theta0`, appending one record per iteration to `history`.
    /// `stochastic`: θ₀ came from SGD epochs; with no L-BFGS iterations to run it is scored without a gradient.
    func fit(from theta0: [Float], stochastic: Bool = false, history: inout [IterationRecord]) -> Outcome {
        let n = Double(objective.matrix.rows)
        if stochastic && options.maxIterations == 0 { return scoredOnly(theta0, history: &history) }
        var x = evaluate(theta0)
        var memory = LBFGSMemory(capacity: options.historySize)
        var scored = score(x.theta)
        var best = (theta: x.theta, loss: scored?.loss ?? .infinity, accuracy: scored?.accuracy, sinceBest: 0)
        record(0, x, scored, &history)

        var reason = StopReason.maxIterations
        var iteration = 0
        if maxAbs(x.gradient) <= options.tolerance { reason = .gradientTolerance }
        while reason == .maxIterations && iteration < options.maxIterations {
            let (d, slope) = descentDirection(x, &memory)
            let step = memory.isEmpty ? min(1, 1 / max(dot(x.gradient, x.gradient).squareRoot(), 1e-30)) : 1
            guard let next = lineSearch(from: x, direction: d, slope0: slope, step: step) else {
                // A stale curvature model can point badly: retry once as steepest descent.
                if !memory.isEmpty { memory.reset(); continue }
                reason = .lineSearchStalled
                break
            }
            iteration += 1
            memory.push(s: difference(next.theta, x.theta), y: difference(next.gradient, x.gradient))
            let previousLoss = x.loss
            x = next
            scored = score(x.theta)
            record(iteration, x, scored, &history)

            if let patience = options.earlyStoppingPatience, let v = scored {
                if v.loss < best.loss {
                    best = (x.theta, v.loss, v.accuracy, 0)
                } else {
                    best.sinceBest += 1
                    if best.sinceBest >= patience { reason = .earlyStopping; break }
                }
            }
            if maxAbs(x.gradient) <= options.tolerance { reason = .gradientTolerance; break }
            if abs(previousLoss - x.loss) <= options.lossTolerance * max(abs(previousLoss), abs(x.loss), 1) {
                reason = .lossTolerance
                break
            }
        }
        if reason == .earlyStopping {
            let restored = evaluate(best.theta)
            return Outcome(theta: best.theta, stopReason: reason, iterations: iteration,
                           trainAccuracy: Double(restored.correct) / n, validationAccuracy: best.accuracy,
                           validationLoss: best.loss)
        }
        return Outcome(theta: x.theta, stopReason: reason, iterations: iteration,
                       trainAccuracy: Double(x.correct) / n, validationAccuracy: scored?.accuracy,
                       validationLoss: scored?.loss)
    }

    /// θ₀ from SGD epochs with no L-BFGS iterations to run: scored without a gradient. With a validation split the
    /// choice rests on it alone; the training loss is then left out (NaN), and a refit without one measures its own.
    private func scoredOnly(_ theta0: [Float], history: inout [IterationRecord]) -> Outcome {
        let scored = score(theta0)
        let e = scored != nil ? SoftmaxObjective<Matrix>.Evaluation(loss: .nan, correct: 0)
            : theta0.withUnsafeBufferPointer { objective.evaluate($0.baseAddress!, gradient: nil) }
        let r = IterationRecord(
            l2: objective.l2, iteration: 0, loss: e.loss, gradientNorm: .infinity,
            trainAccuracy: scored != nil ? .nan : Double(e.correct) / Double(objective.matrix.rows), validationAccuracy: scored?.accuracy,
            validationLoss: scored?.loss, elapsed: elapsedSeconds())
        history.append(r)
        progress?(r)
        return Outcome(theta: theta0, stopReason: .epochs, iterations: 0, trainAccuracy: r.trainAccuracy,
                       validationAccuracy: scored?.accuracy, validationLoss: scored?.loss)
    }

    private func elapsedSeconds() -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
    }

    /// The record of iteration `iteration` at `x`, appended to `history` and reported.
    private func record(_ iteration: Int, _ x: Point, _ scored: (loss: Double, accuracy: Double)?, _ history: inout [IterationRecord]) {
        let r = IterationRecord(
            l2: objective.l2, iteration: iteration, loss: x.loss, gradientNorm: maxAbs(x.gradient),
            trainAccuracy: Double(x.correct) / Double(objective.matrix.rows), validationAccuracy: scored?.accuracy,
            validationLoss: scored?.loss, elapsed: elapsedSeconds())
        history.append(r)
        progress?(r)
    }

    /// L-BFGS's direction and its slope; steepest descent (and a fresh memory) when that is not a descent direction.
    private func descentDirection(_ x: Point, _ memory: inout LBFGSMemory) -> (direction: [Float], slope: Double) {
        var d = memory.direction(x.gradient)
        var slope = dot(x.gradient, d)
        if !(slope < 0) || !slope.isFinite {
            memory.reset()
            d = x.gradient
            scale(&d, -1)
            slope = dot(x.gradient, d)
        }
        return (d, slope)
    }

    /// A step along `direction` meeting the strong Wolfe conditions (Nocedal & Wright, algorithms 3.5 and 3.6, with
    /// safeguarded cubic interpolation), or Hager and Zhang's approximate Wolfe conditions once the loss is flat to
    /// within its float rounding (`noise`): near the optimum, J from float logits cannot resolve the decrease that
    /// Armijo asks for, but the directional derivative still can. Returns nil when no step is acceptable.
    func lineSearch(from x0: Point, direction d: [Float], slope0: Double, step: Double) -> Point? {
        let c1 = 1e-4, c2 = 0.9, maxEvaluations = 40
        let noise = 1e-6 * abs(x0.loss)
        var evaluations = 0
        func trial(_ a: Double) -> (Point, Double) {
            evaluations += 1
            let p = evaluate(moved(x0.theta, a, d))
            return (p, dot(p.gradient, d))
        }
        func armijo(_ a: Double, _ f: Double) -> Bool { f.isFinite && f <= x0.loss + c1 * a * slope0 }
        func withinNoise(_ f: Double) -> Bool { f.isFinite && f <= x0.loss + noise }
        func acceptable(_ a: Double, _ f: Double, _ g: Double) -> Bool {
            if armijo(a, f) && abs(g) <= -c2 * slope0 { return true }
            // Approximate Wolfe with δ = 0.1, σ = 0.9: σφ′(0) ≤ φ′(α) ≤ (2δ − 1)φ′(0).
            return withinNoise(f) && g >= c2 * slope0 && g <= -0.8 * slope0
        }
        /// The step overshot: the loss rose beyond both the Armijo line and the noise.
        func worse(_ a: Double, _ f: Double, than fRef: Double) -> Bool {
            !f.isFinite || (!armijo(a, f) && !withinNoise(f)) || (f >= fRef && !withinNoise(f))
        }

        typealias End = (a: Double, f: Double, g: Double, point: Point?)
        func zoom(_ low: End, _ high: End) -> Point? {
            var lo = low, hi = high
            while evaluations < maxEvaluations {
                if abs(hi.a - lo.a) <= 1e-12 * max(lo.a, hi.a) { break }
                let flat = withinNoise(lo.f) && withinNoise(hi.f)
                let a = flat ? (lo.a + hi.a) / 2 : cubicStep(lo.a, lo.f, lo.g, hi.a, hi.f, hi.g)
                let (p, g) = trial(a)
                if acceptable(a, p.loss, g) { return p }
                if worse(a, p.loss, than: lo.f) {
                    hi = (a, p.loss, g, nil)
                } else {
                    if g * (hi.a - lo.a) >= 0 { hi = lo }
                    lo = (a, p.loss, g, p)
                }
            }
            // Only a point that lowered the loss is worth taking.
            if let p = lo.point, p.loss < x0.loss { return p }
            return nil
        }

        var previous: End = (0, x0.loss, slope0, nil)
        var a = step
        for _ in 0..<maxEvaluations {
            guard evaluations < maxEvaluations else { break }
            let (p, g) = trial(a)
            if acceptable(a, p.loss, g) { return p }
            if worse(a, p.loss, than: previous.f) || (evaluations > 1 && p.loss >= previous.f && g >= 0) {
                return zoom(previous, (a, p.loss, g, p))
            }
            if g >= 0 { return zoom((a, p.loss, g, p), previous) }
            previous = (a, p.loss, g, p)
            a *= 2
        }
        if let p = previous.point, p.loss < x0.loss { return p }
        return nil
    }
}

/// The minimiser of the cubic through two (step, value, slope) ends, kept 10% inside the interval; the midpoint when
/// the cubic is not usable.
func cubicStep(_ a1: Double, _ f1: Double, _ g1: Double, _ a2: Double, _ f2: Double, _ g2: Double) -> Double {
    let lo = min(a1, a2), hi = max(a1, a2), width = hi - lo
    let mid = lo + width / 2
    guard f1.isFinite, f2.isFinite, g1.isFinite, g2.isFinite, width > 0 else { return mid }
    let d1 = g1 + g2 - 3 * (f1 - f2) / (a1 - a2)
    let disc = d1 * d1 - g1 * g2
    guard disc >= 0 else { return mid }
    let d2 = (a2 > a1 ? 1.0 : -1.0) * disc.squareRoot()
    let denom = g2 - g1 + 2 * d2
    guard denom != 0 else { return mid }
    let a = a2 - (a2 - a1) * (g2 + d2 - d1) / denom
    guard a.isFinite else { return mid }
    return min(max(a, lo + 0.1 * width), hi - 0.1 * width)
}
