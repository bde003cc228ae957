"""scikit-learn as the oracle of mltool's linear learner (LinearTests): the same derived columns, the same penalty.

stdin: {"dir": a datasets/tabular set (train.csv, test.csv), "target": column, "alpha": the L2 strength}. The columns
are docs/FORMAT.md 4.5's "Linear models": a numeric column standardised with the training rows' mean and population
standard deviation (present values only; scale 1 when constant), 0 where missing plus a missing indicator column; a
column of words one-hot over the training rows' values (an unseen value: all zeros). LogisticRegression(C = 1/alpha,
lbfgs, tol 1e-8) for a target of words or at most 10 distinct values, else Ridge(alpha). stdout: {"classes": the
sorted classes, "probabilities": per test row, or "predictions": per test row; "score": test accuracy or RMSE}."""
import json, sys

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression, Ridge

q = json.load(sys.stdin)
train, test = [pd.read_csv(f"{q['dir']}/{part}.csv", keep_default_na=True) for part in ("train", "test")]
target = q["target"]


def derive(frame):
    out = []
    for column in train.columns:
        if column == target:
            continue
        if pd.api.types.is_numeric_dtype(train[column]):
            present = train[column].dropna().to_numpy(dtype=np.float64)
            mean = present.mean() if len(present) else 0.0
            std = present.std() if len(present) else 0.0
            # binary32 as mltool stores them in the model
            mean, scale = np.float32(mean), np.float32(1 / std if std > 0 else 1)
            v = frame[column].to_numpy(dtype=np.float64)
            missing = np.isnan(v)
            out.append(np.where(missing, 0.0, (v.astype(np.float32).astype(np.float64) - mean) * np.float64(scale)))
            out.append(missing.astype(np.float64))
        else:
            for level in sorted(train[column].dropna().unique()):
                out.append((frame[column] == level).to_numpy(dtype=np.float64))
    return np.column_stack(out)


X, Xt = derive(train), derive(test)
y, yt = train[target], test[target]
classify = not pd.api.types.is_numeric_dtype(y) or y.nunique() <= 10
if classify:
    model = LogisticRegression(C=1 / q["alpha"], tol=1e-8, max_iter=20000).fit(X, y.astype(str))
    p = model.predict_proba(Xt)
    labels = model.classes_[p.argmax(axis=1)]
    reply = {"classes": [str(c) for c in model.classes_], "probabilities": p.tolist(),
             "score": float((labels == yt.astype(str).to_numpy()).mean())}
else:
    model = Ridge(alpha=q["alpha"]).fit(X, y.to_numpy(dtype=np.float64))
    p = model.predict(Xt)
    reply = {"predictions": p.tolist(), "score": float(np.sqrt(((p - yt.to_numpy(dtype=np.float64)) ** 2).mean()))}
print(json.dumps(reply))
