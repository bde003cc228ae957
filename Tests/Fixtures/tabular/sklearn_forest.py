"""scikit-learn as the peer of mltool's random forests and single decision trees (ForestTests).

stdin: {"dir": a datasets/tabular set (train.csv, test.csv), "target": column, "model": "forest" | "tree",
"trees": n (forest), "seeds": [seeds], "threads": n}. Columns of words become ordinal codes of their sorted levels
(missing stays NaN: scikit-learn >= 1.4 trees route missing values themselves). RandomForestClassifier / Regressor
and DecisionTreeClassifier / Regressor with their defaults otherwise. stdout: {"scores": per seed, test accuracy for a
target of words or few classes, else RMSE}."""
import json, sys

import numpy as np
import pandas as pd
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

q = json.load(sys.stdin)
train, test = [pd.read_csv(f"{q['dir']}/{part}.csv") for part in ("train", "test")]
target = q["target"]
for column in train.columns:
    if column != target and not pd.api.types.is_numeric_dtype(train[column]):
        levels = sorted(train[column].dropna().unique())
        for frame in (train, test):
            frame[column] = pd.Categorical(frame[column], categories=levels).codes.astype(float)
            frame.loc[frame[column] < 0, column] = np.nan
y = train[target]
classify = not pd.api.types.is_numeric_dtype(y) or y.nunique() <= 10
X, Xt, yt = train.drop(columns=[target]), test.drop(columns=[target]), test[target]
scores = []
for seed in q["seeds"]:
    if q["model"] == "forest":
        kind = RandomForestClassifier if classify else RandomForestRegressor
        model = kind(n_estimators=q["trees"], random_state=seed, n_jobs=q["threads"])
    else:
        model = (DecisionTreeClassifier if classify else DecisionTreeRegressor)(random_state=seed)
    model.fit(X, y)
    p = model.predict(Xt)
    scores.append(float((p == yt.to_numpy()).mean()) if classify else float(np.sqrt(((p - yt.to_numpy()) ** 2).mean())))
print(json.dumps({"scores": scores}))
