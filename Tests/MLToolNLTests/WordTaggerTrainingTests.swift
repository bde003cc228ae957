import Foundation
import MLToolCore
import MLToolData
import MLToolFormat
import Testing
@testable import MLToolNL

@Suite struct WordTaggerTrainingTests {
    /// The first `n` training sentences of EWT.
    static func smallEWT(_ n: Int) throws -> TaggedCorpus? {
        guard NLPaths.haveEWT else { return nil }
        var c = try TaggedCorpus.load(NLPaths.ewt("en_ewt-ud-dev.conllu"))
        c.sentences = Array(c.sentences.prefix(n))
        return c
    }

    @Test func sameSeedGivesTheSameModelBytes() throws {
        guard let corpus = try Self.smallEWT(800) else { return skip("datasets/ud-english-ewt missing") }
        var p = WordTaggerParameters()
        p.epochs = 3
        p.validation = .fraction(0.1)
        let epochs = EpochLog()
        let a = try WordTaggerTrainer(parameters: p).train(corpus) { epochs.append($0) }
        let b = try WordTaggerTrainer(parameters: p).train(corpus)
        #expect(a.validationSentences == 80 && a.trainSentences == 720)
        let (bytesA, bytesB) = (try ModelFile.serialize(a.tagger.model()), try ModelFile.serialize(b.tagger.model()))
        #expect(bytesA == bytesB)
        // Progress: one record per epoch, accuracies in [0, 1], time going forward.
        let log = epochs.records
        #expect(log.map(\.epoch) == Array(1...log.count) && log.count == a.epochs.count)
        #expect(log.allSatisfy { $0.trainAccuracy > 0 && $0.trainAccuracy <= 1 && ($0.validationAccuracy ?? -1) > 0.5 })
        #expect(zip(log, log.dropFirst()).allSatisfy { $0.seconds <= $1.seconds })
        p.seed = 7
        let c = try WordTaggerTrainer(parameters: p).train(corpus)
        #expect(try ModelFile.serialize(c.tagger.model()) != bytesA)
    }

    @Test func badParametersAndDataAreRefused() throws {
        var p = WordTaggerParameters()
        p.epochs = 0
        #expect(throws: TaggerError.invalidParameter(name: "epochs", value: "0", expected: "≥ 1")) {
            try WordTaggerTrainer(parameters: p)
        }
        let one = TaggedCorpus(source: "one.bio", format: .conll,
                               sentences: [TaggedSentence(tokens: ["a", "b"], tags: ["X", "X"])])
        #expect(throws: TaggerError.unusableData(source: "one.bio", reason: "found 1 tag (X); need at least 2")) {
            try WordTaggerTrainer().train(one)
        }
    }

    @Test func modelsThatDoNotHoldTogetherAreRefused() throws {
        let corpus = TaggedCorpus(source: "s", format: .conll, sentences: (0..<40).map { i in
            TaggedSentence(tokens: ["the", "cat", i % 2 == 0 ? "sat" : "ran"], tags: ["DET", "NOUN", "VERB"])
        })
        let tagger = try WordTaggerTrainer().train(corpus).tagger
        #expect(tagger.tag(["the", "dog", "sat"]) == ["DET", "NOUN", "VERB"])
        var m = tagger.model()
        m.metadata.tagger?.features = "mltool-tagger-0"
        #expect(throws: TaggerError.invalidModel(file: "m.bin", what: "feature set",
                                                 expected: "mltool-tagger-1, mltool-tagger-2, mltool-tagger-3", actual: "mltool-tagger-0")) {
            try WordTagger(model: m, file: "m.bin")
        }
        m = tagger.model()
        m.metadata.task = .textClassifier
        #expect(throws: TaggerError.invalidModel(file: "m.bin", what: "task", expected: "wordTagger",
                                                 actual: "textClassifier")) { try WordTagger(model: m, file: "m.bin") }
        m = tagger.model()
        let i = try #require(m.tensors.firstIndex { $0.name == "tagger.transitions" })
        var values = try m.tensors[i].floats()
        values[4] = .nan
        m.tensors[i] = StoredTensor(name: "tagger.transitions", tensor: Tensor(shape: m.tensors[i].shape, data: values))
        #expect(throws: TaggerError.invalidModel(file: "m.bin", what: "tensor 'tagger.transitions' element 4",
                                                 expected: "finite", actual: "nan")) { try WordTagger(model: m, file: "m.bin") }
    }
}

/// Epoch records collected from the progress callback.
final class EpochLog: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [TaggerEpoch] = []
    func append(_ e: TaggerEpoch) { lock.lock(); items.append(e); lock.unlock() }
    var records: [TaggerEpoch] { lock.lock(); defer { lock.unlock() }; return items }
}
