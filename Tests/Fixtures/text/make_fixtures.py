#!/usr/bin/env python3
"""Writes vectorizer.json: a tiny ASCII corpus and scikit-learn's vectorizer outputs for it, the oracle for
Tests/MLToolTextTests. The token pattern below is our tokenizer's rule restricted to ASCII (runs of letters/digits,
apostrophes inside words), so tokenization agrees and the weighting is what is compared.
Run: python3 make_fixtures.py (needs scikit-learn)."""
import json
import os

from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

TOKEN = r"[A-Za-z0-9]+(?:'[A-Za-z0-9]+)*"
train = [
    "The quick brown fox jumps over the lazy dog.",
    "A fast brown dog! It doesn't stop; the dog runs and runs and runs.",
    "Library for parsing JSON documents in C, with a small API.",
    "Python bindings for the JSON parsing library.",
    "Documentation for the fox game: rules, maps and 3 levels.",
    "Game data files for a fast arcade game (levels 1-10).",
    "Tools to convert images: PNG, JPEG, GIF; fast and small.",
    "Image viewer for X11 with PNG and JPEG support.",
    "The dog and the fox are friends. The fox is quick.",
    "Shared library for image decoding, JPEG and PNG.",
    "Don't panic: a small C library for parsing command line options.",
    "Arcade game with dogs, foxes and 99 levels of fun.",
]
test = [
    "A quick game about a fox and a dog.",
    "Fast JSON library, written in C.",
    "Completely unseen words here!",
    "",
]


def csr(m):
    m = m.tocsr()
    m.sort_indices()
    return {"offsets": m.indptr.tolist(), "columns": m.indices.tolist(), "values": m.data.tolist()}


cases = []
for name, vectorizer, config in [
    ("tfidf12", TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, token_pattern=TOKEN),
     {"weighting": "tfidf", "minCount": 1, "l2Normalize": True, "sublinearTF": True}),
    ("tfidf12min2", TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=2, token_pattern=TOKEN),
     {"weighting": "tfidf", "minCount": 2, "l2Normalize": True, "sublinearTF": True}),
    ("tfidf11plain", TfidfVectorizer(ngram_range=(1, 1), sublinear_tf=False, norm=None, token_pattern=TOKEN),
     {"weighting": "tfidf", "minCount": 1, "l2Normalize": False, "sublinearTF": False, "wordNgrams": [1, 1]}),
    ("count12", CountVectorizer(ngram_range=(1, 2), token_pattern=TOKEN),
     {"weighting": "count", "minCount": 1, "l2Normalize": False, "sublinearTF": False}),
    ("binary12", CountVectorizer(ngram_range=(1, 2), binary=True, token_pattern=TOKEN),
     {"weighting": "binary", "minCount": 1, "l2Normalize": False, "sublinearTF": False}),
]:
    x = vectorizer.fit_transform(train)
    case = {"name": name, "config": config, "vocabulary": vectorizer.get_feature_names_out().tolist(),
            "train": csr(x), "test": csr(vectorizer.transform(test))}
    if hasattr(vectorizer, "idf_"):
        case["idf"] = vectorizer.idf_.tolist()
    cases.append(case)

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vectorizer.json")
with open(path, "w") as f:
    json.dump({"train": train, "test": test, "cases": cases}, f, separators=(",", ":"))
print(path, os.path.getsize(path), "bytes")
