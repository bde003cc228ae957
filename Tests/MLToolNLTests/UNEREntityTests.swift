import Foundation
import MLToolData
import MLToolEval
import Testing
@testable import MLToolNL

/// Names (PER, ORG, LOC) on UNER English EWT: trained on its dev split (the train file is not published), scored
/// on its test split, with Brown clusters learned from UD English EWT's train text (the same web genres, none of the
/// test sentences); seqeval is the oracle of the entity scores and python-crfsuite the peer, trained on the same split
/// in the same run.
@Suite(.serialized) struct UNEREntityTests {
    static let root = NLPaths.root
    static let uner = ProcessInfo.processInfo.environment["UNER_EWT_DIR"] ?? root + "/../shared/datasets/uner-english-ewt"
    static let ewt = ProcessInfo.processInfo.environment["UD_EWT_DIR"] ?? root + "/../shared/datasets/ud-english-ewt"
    static var available: Bool {
        [uner + "/en_ewt-ud-dev.iob2", uner + "/en_ewt-ud-test.iob2", ewt + "/en_ewt-ud-train.conllu"]
            .allSatisfy { FileManager.default.fileExists(atPath: $0) }
    }

    /// python-crfsuite with the CRFsuite tutorial's standard lexical features (bench/run.py's), L-BFGS 100
    /// iterations, trained on argv[1] and scored by seqeval on argv[2]: prints the entity F1.
    static let crfsuite = """
        import sys, warnings
        warnings.simplefilter("ignore")
        import pycrfsuite
        from seqeval.metrics import f1_score
        def read(path):
            out, cur = [], []
            for line in open(path, encoding="utf-8"):
                line = line.rstrip("\\n")
                if line.startswith("#"): continue
                if not line.strip():
                    if cur: out.append(cur); cur = []
                    continue
                c = line.split("\\t"); out_tag = c[2] if len(c) > 2 else "O"
                cur.append((c[1], out_tag))
            if cur: out.append(cur)
            return out
        def feats(words, i):
            w = words[i]
            f = {"bias": 1.0, "lower": w.lower(), "suffix3": w[-3:], "suffix2": w[-2:], "prefix2": w[:2],
                 "isupper": w.isupper(), "istitle": w.istitle(), "isdigit": w.isdigit()}
            for d, name in ((-1, "-1"), (1, "+1")):
                j = i + d
                if 0 <= j < len(words):
                    v = words[j]
                    f.update({name + ":lower": v.lower(), name + ":istitle": v.istitle(), name + ":isupper": v.isupper(),
                              name + ":suffix3": v[-3:]})
                else:
                    f["BOS" if d < 0 else "EOS"] = True
            return f
        train, test = read(sys.argv[1]), read(sys.argv[2])
        t = pycrfsuite.Trainer(verbose=False)
        for s in train:
            words = [w for w, _ in s]
            t.append([feats(words, i) for i in range(len(words))], [y for _, y in s])
        t.set_params({"c1": 0.1, "c2": 0.01, "max_iterations": 100})
        model = sys.argv[3]
        t.train(model)
        tagger = pycrfsuite.Tagger(); tagger.open(model)
        pred = [tagger.tag([feats([w for w, _ in s], i) for i in range(len(s))]) for s in test]
        print(f1_score([[y for _, y in s] for s in test], pred))
        """

    /// Entity F1 of python-crfsuite trained on `train`, scored on `test` (nil: not installed, said by `skip`).
    static func crfsuiteF1(train: String, test: String) -> Double? {
        let model = NSTemporaryDirectory() + "mltool-crfsuite-\(UUID().uuidString).crfsuite"
        defer { try? FileManager.default.removeItem(atPath: model) }
        let (output, error) = python(crfsuite, [train, test, model])
        guard let output, let f1 = Double(output.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            skip("python-crfsuite peer not available (pip install python-crfsuite seqeval): \(error.suffix(300))")
            return nil
        }
        return f1
    }
}
