#!/usr/bin/env python3
"""Writes logreg.json: a small synthetic 4-class problem and scikit-learn's LogisticRegression (lbfgs, multinomial)
solutions for it, the oracle for Tests/MLToolTrainTests.

Our objective is  sum(v_i * CE_i) / sum(v) + l2/2 * ||W||^2  (bias unpenalised), v_i = sample_weight * class_weight;
scikit-learn's is the same with l2 = 1 / (C * sum(v)). Run: python3 make_fixtures.py (needs numpy, scikit-learn).
"""
import json
import os

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

rng = np.random.default_rng(20261129)
n, d, k = 300, 20, 4
priors = np.array([0.4, 0.3, 0.2, 0.1])
y = rng.choice(k, size=n, p=priors)
centers = rng.normal(0, 0.8, size=(k, d))
scales = rng.uniform(0.5, 3.0, size=d)
offsets = rng.normal(0, 2.0, size=d)
x = ((centers[y] + rng.normal(0, 1, size=(n, d))) * scales + offsets).astype(np.float32)
# Standardise so the oracle problem is well conditioned, then round to float32: Swift reads exactly these values.
xs = StandardScaler().fit_transform(x.astype(np.float64)).astype(np.float32)
sample_weight = rng.uniform(0.5, 2.0, size=n).astype(np.float32)

cases = []
for name, C, balanced, weighted in [("plain", 1.0, False, False), ("balanced", 0.05, True, False),
                                    ("weighted", 10.0, False, True)]:
    sw = sample_weight.astype(np.float64) if weighted else None
    model = LogisticRegression(C=C, solver="lbfgs", tol=1e-12, max_iter=100000,
                               class_weight="balanced" if balanced else None)
    model.fit(xs.astype(np.float64), y, sample_weight=sw)
    v = np.ones(n) if sw is None else sw.copy()
    if balanced:
        counts = np.bincount(y, weights=v, minlength=k)
        v = v * (v.sum() / (k * counts))[y]
    l2 = 1.0 / (C * v.sum())
    z = xs.astype(np.float64) @ model.coef_.T + model.intercept_
    lse = np.log(np.exp(z - z.max(1, keepdims=True)).sum(1)) + z.max(1)
    ce = lse - z[np.arange(n), y]
    objective = (v * ce).sum() / v.sum() + 0.5 * l2 * (model.coef_ ** 2).sum()
    cases.append({
        "name": name, "C": C, "l2": l2, "balanced": balanced, "weighted": weighted,
        "weights": model.coef_.T.reshape(-1).tolist(),          # d x k row-major (IN, OUT)
        "bias": (model.intercept_ - model.intercept_.mean()).tolist(),
        "probabilities": model.predict_proba(xs.astype(np.float64)).reshape(-1).tolist(),
        "objective": float(objective),
        "iterations": int(model.n_iter_[0]),
    })

scaler = StandardScaler().fit(x.astype(np.float64))
out = {
    "rows": n, "cols": d, "classes": k,
    "raw": [float(str(v)) for v in x.reshape(-1)],
    "x": [float(str(v)) for v in xs.reshape(-1)],
    "labels": y.tolist(),
    "sampleWeights": [float(str(v)) for v in sample_weight],
    "scalerMean": scaler.mean_.tolist(), "scalerScale": scaler.scale_.tolist(),
    "cases": cases,
}
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "logreg.json")
with open(path, "w") as f:
    json.dump(out, f, separators=(",", ":"))
print(path, os.path.getsize(path), "bytes;", [(c["name"], c["iterations"]) for c in cases])
