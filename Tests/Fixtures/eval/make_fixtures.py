#!/usr/bin/env python3
"""Writes eval fixtures: random predictions and scikit-learn's metrics on them (the oracle for MLToolEvalTests).
Run: python3 Tests/Fixtures/eval/make_fixtures.py  (needs numpy and scikit-learn)."""
import json, os
import numpy as np
from sklearn.metrics import (accuracy_score, confusion_matrix, log_loss, precision_recall_fscore_support,
                             roc_auc_score, top_k_accuracy_score)

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(7)
cases = []
for name, n, k in [("multiclass", 200, 6), ("binary", 150, 2), ("missing-class", 60, 5)]:
    logits = rng.normal(size=(n, k)) * 2
    truth = rng.integers(0, k, size=n)
    if name == "missing-class":
        truth[truth == 3] = 0          # class 3 never occurs in truth
        logits[:, 3] -= 10             # and is never predicted
    logits[np.arange(n), truth] += 1.5  # better than chance
    p = np.exp(logits - logits.max(1, keepdims=True)); p /= p.sum(1, keepdims=True)
    p = p.astype(np.float32)
    pred = p.argmax(1)
    labels = list(range(k))
    prec, rec, f1, sup = precision_recall_fscore_support(truth, pred, labels=labels, zero_division=0)
    case = {
        "name": name, "classes": k, "truth": truth.tolist(), "probabilities": p.ravel().tolist(),
        "accuracy": accuracy_score(truth, pred),
        "top2": top_k_accuracy_score(truth, p, k=2, labels=labels) if k > 2 else None,
        "log_loss": log_loss(truth, p.astype(np.float64), labels=labels),
        "precision": prec.tolist(), "recall": rec.tolist(), "f1": f1.tolist(), "support": sup.tolist(),
        "confusion": confusion_matrix(truth, pred, labels=labels).tolist(),
    }
    for avg in ["macro", "weighted"]:
        ap, ar, af, _ = precision_recall_fscore_support(truth, pred, average=avg, zero_division=0)
        case[avg] = [ap, ar, af]
    if k == 2:
        case["roc_auc"] = roc_auc_score(truth, p[:, 1].astype(np.float64))
    cases.append(case)
with open(os.path.join(here, "sklearn_metrics.json"), "w") as f:
    json.dump(cases, f)
print("wrote", len(cases), "cases")
