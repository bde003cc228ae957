#!/usr/bin/env python3
"""python-crfsuite as the word-tagging peer, with the CRFsuite tutorial's standard lexical features.

`bench/run.py` (part 11, UPOS) imports `crf_features`; run as a script it is the named-entity peer of
Tests/MLToolNLTests/UNEREntityTests.swift: trains on an IOB2 file (argv[1]; CoNLL-U-style columns, token in column 2,
tag in column 3, `#` comments skipped), L-BFGS 100 iterations, writes the model to argv[3], tags argv[2] and prints
seqeval's entity F1. One home for the features, so the bench and the test compare against the same peer.
"""
import sys
import warnings


def crf_features(words, i):
    """The CRFsuite tutorial's standard lexical features for word i."""
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


def read_iob(path):
    """Sentences of (token, tag) from a UNER-style IOB2 file (number, token, tag columns)."""
    out, cur = [], []
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if line.startswith("#"):
            continue
        if not line.strip():
            if cur:
                out.append(cur)
                cur = []
            continue
        c = line.split("\t")
        cur.append((c[1], c[2] if len(c) > 2 else "O"))
    if cur:
        out.append(cur)
    return out


def entity_f1(train_path, test_path, model_path):
    import pycrfsuite
    from seqeval.metrics import f1_score
    train, test = read_iob(train_path), read_iob(test_path)
    trainer = pycrfsuite.Trainer(verbose=False)
    for s in train:
        words = [w for w, _ in s]
        trainer.append([crf_features(words, i) for i in range(len(words))], [y for _, y in s])
    trainer.set_params({"c1": 0.1, "c2": 0.01, "max_iterations": 100})
    trainer.train(model_path)
    tagger = pycrfsuite.Tagger()
    tagger.open(model_path)
    predicted = [tagger.tag([crf_features([w for w, _ in s], i) for i in range(len(s))]) for s in test]
    return f1_score([[y for _, y in s] for s in test], predicted)


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    print(entity_f1(sys.argv[1], sys.argv[2], sys.argv[3]))
