import Foundation
import MLToolCore
import MLToolTestSupport
import Testing
@testable import MLToolTrain

/// `FineTuning`: the top (a trainable graph) and the softmax head on standardized features trained together.
@Suite struct FineTuningTests {
    /// A 1×1 convolution (ReLU) from a 3×3×4 map to 6 channels, global average pooling, and a head on the 6 features.
    static func network(seed: UInt64) throws -> (FineTuning, FineTuning.Rows) {
        var rng = SplitMix64(seed: seed)
        func values(_ n: Int, _ scale: Double) -> [Float] { random(n, &rng).map { Float($0 * scale) } }
        let conv = TrainableGraph.Convolution(outChannels: 6, kernel: (1, 1), activation: .relu, weight: 0, bias: 1)
        let top = try TrainableGraph(nodes: [.init(.convolution(conv), inputs: [TrainableGraph.input]),
                                             .init(.globalAveragePool, inputs: [0])],
                                     parameters: [values(4 * 6, 0.5), values(6, 0.1)])
        let head = try FineTuning.Head(mean: values(6, 0.1), inverseStd: values(6, 0.5).map { 1 + abs($0) },
                                       weights: values(6 * 3, 0.5), bias: values(3, 0.1))
        let labels = (0..<24).map { $0 % 3 }
        var x = values(24 * 9 * 4, 1)
        for (r, y) in labels.enumerated() { for i in 0..<9 { x[r * 36 + i * 4 + y] += 1.5 } }   // class-dependent channel
        return (FineTuning(top: top, head: head), try FineTuning.Rows(values: x, labels: labels, height: 3, width: 3, channels: 4))
    }

    /// Every gradient (the top's weights and bias, the head's weights and bias) against central differences of the
    /// batch loss: the head's backward pass is new code on top of the graph's checked one.
    @Test func gradientsMatchCentralDifferences() throws {
        let (net, rows) = try Self.network(seed: 3)
        let (x, labels, shape) = rows.batch(Array(0..<8)[...])
        let (_, gradients) = try net.gradients(x, shape: shape, labels: labels)
        var parameters = net.top.parameters + [net.head.weights, net.head.bias]
        func loss(_ p: [[Float]]) throws -> Double {
            var n = net
            n.top.parameters = Array(p.prefix(2))
            (n.head.weights, n.head.bias) = (p[2], p[3])
            return try n.gradients(x, shape: shape, labels: labels).0
        }
        var checked = 0
        for t in parameters.indices {
            for i in parameters[t].indices {
                let v = parameters[t][i], h: Float = 1e-2
                parameters[t][i] = v + h
                let up = try loss(parameters)
                parameters[t][i] = v - h
                let down = try loss(parameters)
                parameters[t][i] = v
                let numeric = (up - down) / (2 * Double(h))
                #expect(abs(numeric - Double(gradients[t][i])) <= 2e-3 + 2e-2 * abs(numeric), "parameter \(t)[\(i)]")
                checked += 1
            }
        }
        #expect(checked == 24 + 6 + 18 + 3)
    }

    /// Training lowers the loss, keeps the best validation epoch (never worse than the start) and gives the same
    /// bits for the same seed.
    @Test func trainingKeepsTheBestValidationEpochAndIsDeterministic() throws {
        let (net, rows) = try Self.network(seed: 5)
        var options = FineTuning.Options()
        (options.epochs, options.batchSize, options.rate) = (12, 4, 3e-2)
        let a = try FineTuning.train(top: net.top, head: net.head, train: rows, validation: rows, options: options)
        let b = try FineTuning.train(top: net.top, head: net.head, train: rows, validation: rows, options: options)
        #expect(a.top.parameters == b.top.parameters && a.head == b.head, "same seed, same bits")
        #expect(a.epochs.count == 12)
        let losses = a.epochs.map(\.trainLoss)
        let (first, last) = (try #require(losses.first), try #require(losses.last))
        #expect(last < first, "loss \(losses)")
        let start = try #require(a.startingValidationAccuracy)
        let kept = try a.keptEpoch == 0 ? start : #require(a.epochs[a.keptEpoch - 1].validationAccuracy)
        #expect(kept >= (a.epochs.compactMap(\.validationAccuracy) + [start]).max() ?? 0)
        #expect(try a.accuracy(on: rows) == kept, "the kept epoch's network is the one returned")
        #expect(kept > start, "start \(start), epochs \(a.epochs.map { $0.validationAccuracy ?? 0 })")
    }
}
