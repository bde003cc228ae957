import Foundation
import Testing
import MLToolCore
@testable import MLToolFormat

/// Sound classifier files (docs/FORMAT.md section 4.7, rule 16): a small valid one round-trips, and each damaged
/// `sound` object, graph or label list is refused with its exact error.
@Suite struct SoundFileTests {
    static let file = "sound.mlt"

    /// Windows (−1, 76, 32, 1) → flatten → dense (2432 → 2) → softmax `probabilities`.
    static func model(_ edit: (inout ModelMetadata) -> Void = { _ in }) -> Model {
        let graph = Graph(inputs: [GraphInput(name: "windows", shape: [-1, 76, 32, 1])], outputs: ["probabilities"], nodes: [
            Node(name: "flatten", op: .flatten, inputs: ["windows"], outputs: ["flat"], attributes: Attributes(axis: 1)),
            Node(name: "head", op: .dense, inputs: ["flat", "w", "b"], outputs: ["logits"]),
            Node(name: "softmax", op: .softmax, inputs: ["logits"], outputs: ["probabilities"], attributes: Attributes(axis: -1)),
        ])
        var md = ModelMetadata(task: .soundClassifier, graph: graph, labels: ["dog", "siren"],
                               provenance: Provenance(toolVersion: "test", seed: 1))
        md.sound = SoundConfig(minimumSamples: 24000, overlap: 0.9)
        edit(&md)
        return Model(metadata: md, tensors: [
            StoredTensor(name: "w", tensor: Tensor(shape: [2432, 2], data: (0..<4864).map { Float($0 % 7) / 7 })),
            StoredTensor(name: "b", tensor: Tensor(shape: [2], data: [0.5, -0.5])),
        ])
    }

    static func read(_ m: Model) throws -> Model { try ModelFile.read(bytes: try ModelFile.serialize(m), name: file) }

    @Test func roundTrips() throws {
        let m = Self.model()
        let r = try Self.read(m)
        #expect(r.metadata == m.metadata)
        #expect(try r.tensors.map { try $0.floats() } == m.tensors.map { try $0.floats() })
    }

    static let cases: [(String, @Sendable (inout ModelMetadata) -> Void)] = [
        ("sound: missing for task soundClassifier", { $0.sound = nil }),
        ("sound: present for task network", { $0.task = .network }),
        ("frontEnd: 'mfcc'; expected speech-mel-v1", { $0.sound?.frontEnd = "mfcc" }),
        ("sampleRate: 44100; expected 16000 for speech-mel-v1", { $0.sound?.sampleRate = 44100 }),
        ("minimumSamples: 100; expected 1272…57600000", { $0.sound?.minimumSamples = 100 }),
        ("overlap: 1.0; expected 0 ≤ overlap < 1", { $0.sound?.overlap = 1 }),
        ("graph.inputs[0].shape: [-1, 76, 32]; expected [-1, 76, 32, 1]", { $0.graph?.inputs[0].shape = [-1, 76, 32] }),
        ("graph.outputs: [\"logits\"]; expected [\"probabilities\"]", { $0.graph?.outputs = ["logits"] }),
        ("labels: 1 labels; need at least 2", { $0.labels = ["dog"] }),
        ("labels: 'dog' occurs twice", { $0.labels = ["dog", "dog"] }),
    ]

    @Test(arguments: 0..<cases.count) func refusesWithItsMessage(_ i: Int) {
        let (message, edit) = Self.cases[i]
        #expect {
            _ = try Self.read(Self.model(edit))
        } throws: { error in
            "\(error)" == "\(Self.file): sound: \(message)"
        }
    }
}
