import Foundation
import MLToolCore
import MLToolData
import MLToolEngine
import MLToolEval
import MLToolQuant

/// A few preprocessed images run through the float model, measured once: the per-channel mean of every conv /
/// dense input (bias correction) and E[x xᵀ] of every 1×1 conv / dense input (error feedback). Also measures how
/// much one quantized tensor alone moves the output (`sensitivity`, for --max-size and --max-drop).
public struct QuantizeCalibration: Sendable {
    let inputName: String
    let shape: [Int]
    let images: [[Float]]
    let layers: [BiasCorrection.Layer]
    let threads: Int
    /// Input means of each layer in the float model.
    private(set) var floatMeans: [String: [Float]] = [:]
    /// E[x xᵀ] (cin × cin) of the inputs of 1×1 conv and dense layers, by input name, from up to
    /// `hessianPositions` positions per image.
    private(set) var hessians: [String: [Float]] = [:]
    let hessianInputs: [String: Int]
    static let hessianPositions = 32
    /// Where the images came from, for the report.
    public let source: String
    /// Paths of the images used (an accuracy gate on the same items leaves them out).
    public let paths: Set<String>

    /// Picks `count` items spread evenly over `items` (folders list classes in order, so every class is hit).
    public init(model: Model, modelPath: String, items: [LabeledItem], count: Int, source: String, threads: Int) throws {
        let classifier = try ImageClassifier(model: model, path: modelPath, threads: threads)
        let step = max(1, items.count / max(1, count))
        let picked = stride(from: 0, to: items.count, by: step).prefix(count).map { items[$0] }
        images = try picked.map { try classifier.input(for: try ImageDecoder.decode(path: $0.path)) }
        paths = Set(picked.map(\.path))
        inputName = classifier.inputName
        shape = [classifier.preprocessing.height, classifier.preprocessing.width, classifier.preprocessor.channels]
        layers = BiasCorrection.layers(of: model)
        let shapes = model.tensorsByName.mapValues(\.shape)
        var hIn = [String: Int]()
        for l in layers where l.groups == 1 {
            guard let s = shapes[l.weight], s.count == 2 || (s.count == 4 && s[0] == 1 && s[1] == 1) else { continue }
            hIn[l.input] = s[s.count - 2]
        }
        hessianInputs = hIn
        self.threads = threads
        self.source = "\(images.count) \(source) images"
        floatMeans = try means(of: model, hessians: &hessians)
    }

    /// Per-channel (last axis) means of every layer input of `model` over the calibration images; fills
    /// `hessians` for the inputs in `hessianInputs`.
    func means(of model: Model, hessians: inout [String: [Float]]) throws -> [String: [Float]] {
        var hsum = [String: [Double]](), hcount = [String: Int]()
        let engine = try Engine(model: model, threads: threads)
        let names = Array(Set(layers.map(\.input))).sorted()
        var sums = [String: [Double]]()
        var counts = [String: Int]()
        var start = 0
        while start < images.count {
            // Two images per run: every layer's activations are kept at once.
            let chunk = images[start..<min(images.count, start + 2)]
            let x = Tensor(shape: [chunk.count] + shape, data: Array(chunk.joined()))
            let out = try engine.run([inputName: x], outputs: names)
            for name in names {
                guard let t = out[name], let c = t.shape.last, c > 0 else { continue }
                var s = sums[name] ?? [Double](repeating: 0, count: c)
                guard s.count == c else { continue }
                t.data.withUnsafeBufferPointer { p in
                    var i = 0
                    while i < p.count { for j in 0..<c { s[j] += Double(p[i + j]) }; i += c }
                }
                sums[name] = s
                counts[name, default: 0] += t.count / c
                if let n = hessianInputs[name], n == c {
                    var h = hsum[name] ?? [Double](repeating: 0, count: n * n)
                    let positions = t.count / c, perImage = max(1, positions / max(1, chunk.count))
                    let step = max(1, perImage / Self.hessianPositions)
                    var used = 0
                    t.data.withUnsafeBufferPointer { p in
                        guard let px = p.baseAddress else { return }
                        h.withUnsafeMutableBufferPointer { hp in
                            var pos = 0
                            while pos < positions {
                                let x = px + pos &* n
                                for a in 0..<n {
                                    let xa = Double(x[a])
                                    if xa == 0 { continue }
                                    let row = a &* n
                                    for b in a..<n { hp[row &+ b] += xa * Double(x[b]) }
                                }
                                used += 1
                                pos += step
                            }
                        }
                    }
                    hsum[name] = h
                    hcount[name, default: 0] += used
                }
            }
            start += chunk.count
        }
        for (name, h) in hsum {
            guard let n = hessianInputs[name] else { continue }
            let count = Double(max(1, hcount[name] ?? 1))
            var full = [Float](repeating: 0, count: n * n)
            for a in 0..<n { for b in a..<n { let v = Float(h[a * n + b] / count); full[a * n + b] = v; full[b * n + a] = v } }
            hessians[name] = full
        }
        var result = [String: [Float]]()
        for (name, s) in sums {
            let n = Double(max(1, counts[name] ?? 1))
            result[name] = s.map { Float($0 / n) }
        }
        return result
    }

    /// `ErrorFeedback` factors by weight name, for the 1×1 conv and dense layers.
    func errorFeedbackFactors() -> [String: ErrorFeedback.Factor] {
        var out = [String: ErrorFeedback.Factor]()
        for l in layers {
            guard let n = hessianInputs[l.input], let h = hessians[l.input],
                  let u = ErrorFeedback.factor(hessian: h, inputs: n) else { continue }
            out[l.weight] = u
        }
        return out
    }

    /// The model's output probabilities on the calibration images (n × classes).
    func probabilities(of model: Model, modelPath: String) throws -> [Float] {
        let classifier = try ImageClassifier(model: model, path: modelPath, threads: threads)
        return try classifier.run(images).flatMap { $0 }
    }

    /// How much each compressed tensor alone moves the output: mean KL(float ‖ model with only that tensor, and its
    /// corrected bias, taken from `quantized`) on the calibration images. One forward pass per tensor.
    func sensitivity(original: Model, quantized: Model, tensors names: [String], modelPath: String,
                     classes: Int) throws -> [String: Double] {
        let reference = try probabilities(of: original, modelPath: modelPath)
        return try eachAlone(original: original, quantized: quantized, tensors: names) { m in
            ModelComparison.compare(reference, try probabilities(of: m, modelPath: modelPath), classes: classes).meanKL
        }
    }

    /// `measure` of the float model with only one of `names` (and its corrected bias) taken from `quantized`, for
    /// each name.
    private func eachAlone(original: Model, quantized: Model, tensors names: [String],
                           _ measure: (Model) throws -> Double) throws -> [String: Double] {
        let q = quantized.tensorsByName
        let biasOf = Dictionary(layers.map { ($0.weight, $0.bias) }, uniquingKeysWith: { a, _ in a })
        var out = [String: Double]()
        for name in names {
            var m = original
            for (i, t) in m.tensors.enumerated() where t.name == name || t.name == biasOf[name] {
                if let replacement = q[t.name] { m.tensors[i] = replacement }
            }
            out[name] = try measure(m)
        }
        return out
    }

    /// A detector's version of `sensitivity`: how much each compressed tensor alone moves the raw graph outputs
    /// (the decoder's inputs), as Σ(quantized − float)² / Σ float² over the calibration images.
    func outputChange(original: Model, quantized: Model, tensors names: [String]) throws -> [String: Double] {
        func outputs(_ m: Model) throws -> [Float] {
            let engine = try Engine(model: m, threads: threads)
            var all: [Float] = []
            for image in images {
                let out = try engine.run([inputName: Tensor(shape: [1] + shape, data: image)])
                for name in out.keys.sorted() { all += out[name]?.data ?? [] }
            }
            return all
        }
        let reference = try outputs(original)
        let energy = max(reference.reduce(0.0) { $0 + Double($1) * Double($1) }, .leastNormalMagnitude)
        return try eachAlone(original: original, quantized: quantized, tensors: names) { m in
            zip(reference, try outputs(m)).reduce(0.0) { $0 + Double($1.0 - $1.1) * Double($1.0 - $1.1) } / energy
        }
    }

    /// Bias correction from the float model's input means. Returns the number of biases adjusted.
    func correctBiases(original: Model, quantized: inout Model) throws -> Int {
        try BiasCorrection.apply(original: original, quantized: &quantized, inputMeans: floatMeans)
    }
}
