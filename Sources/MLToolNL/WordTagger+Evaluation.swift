import MLToolData
import MLToolEval

extension WordTagger {
    /// Tags every sentence of `corpus` (its own tokens) and scores the result: token accuracy, per-tag scores,
    /// confusion, and entity scores when the tagger's tags are BIO/BIOES.
    public func evaluate(_ corpus: TaggedCorpus) -> (report: TaggingReport, predicted: [[String]]) {
        let predicted = corpus.sentences.map { tag($0.tokens) }
        let report = TaggingReport.evaluate(truth: corpus.sentences.map(\.tags), predicted: predicted, labels: tags,
                                            scheme: scheme)
        return (report, predicted)
    }
}
