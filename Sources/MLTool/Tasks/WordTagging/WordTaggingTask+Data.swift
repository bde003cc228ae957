import Foundation

extension WordTaggingTask {
    /// Tokens per tag (read with the training default's tag column), a few words of each tag, and the first sentences
    /// with their tags.
    public static func dataSummary(_ data: String) throws -> DataSummary {
        let corpus = try TaggedCorpus.load(data, tagColumn: WordTaggerPipelineParameters().tagColumn)
        var counts = [String: Int](), words = [String: [String]]()
        for sentence in corpus.sentences {
            for (word, tag) in zip(sentence.tokens, sentence.tags) {
                counts[tag, default: 0] += 1
                if words[tag, default: []].count < DataSummary.samplesPerClass, !words[tag, default: []].contains(word) {
                    words[tag, default: []].append(word)
                }
            }
        }
        var s = DataSummary()
        s.classes = corpus.tags.map { .init(label: $0, count: counts[$0] ?? 0, samples: words[$0] ?? []) }
        s.sentences = corpus.sentences.prefix(3 * DataSummary.samplesPerClass).map { .init(words: $0.tokens, tags: $0.tags) }
        return s
    }
}
