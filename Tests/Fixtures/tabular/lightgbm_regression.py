"""LightGBM as the peer of mltool's regression losses (BoostedTreeLossTests).

stdin: {"dir": a datasets/tabular set (train.csv, validation.csv, test.csv), "target": column, "objective":
"regression" | "l1" | "huber", "rounds": at most, "threads": n}. LightGBM 4's defaults otherwise (huber's alpha 0.9;
columns of words as pandas categories, their levels in sorted order), early stopping after 20 rounds without a better
validation loss. stdout: {"rmse", "mae"} on the test rows and "rounds" (the best iteration, or all)."""
import json, sys

import lightgbm as lgb
import numpy as np
import pandas as pd

q = json.load(sys.stdin)
train, validation, test = [pd.read_csv(f"{q['dir']}/{part}.csv") for part in ("train", "validation", "test")]
for column in train.columns:
    if not pd.api.types.is_numeric_dtype(train[column]):
        levels = pd.CategoricalDtype(sorted(train[column].dropna().unique()))
        for frame in (train, validation, test):
            frame[column] = frame[column].astype(levels)
target = q["target"]
model = lgb.LGBMRegressor(objective=q["objective"], n_estimators=q["rounds"], n_jobs=q["threads"], verbose=-1)
model.fit(train.drop(columns=[target]), train[target], eval_X=validation.drop(columns=[target]), eval_y=validation[target],
          callbacks=[lgb.early_stopping(20, verbose=False)])
error = model.predict(test.drop(columns=[target])) - test[target].to_numpy()
print(json.dumps({"rmse": float(np.sqrt((error ** 2).mean())), "mae": float(np.abs(error).mean()),
                  "rounds": int(model.best_iteration_ or q["rounds"])}))
