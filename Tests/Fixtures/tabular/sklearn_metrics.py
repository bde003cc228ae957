"""scikit-learn's metrics as an oracle for `mltool eval` on a tabular model (TabularCLITests).

stdin: {"labels": [...], "truth": [class index...], "probabilities": [[p...] per row]} for a classifier, or
{"truth": [value...], "predictions": [value...]} for a regressor. stdout: the metrics as JSON (accuracy, macroF1,
logLoss, rocAUC for two classes, confusion; or rmse, mae, r2). The model's outputs are binary32 values that `mltool
predict` prints as their shortest decimal: they are read back as binary32, as mltool eval holds them."""
import json, sys

import numpy as np
from sklearn import metrics

q = json.load(sys.stdin)
truth = np.asarray(q["truth"])
if "probabilities" in q:
    p = np.asarray(q["probabilities"], dtype=np.float32).astype(np.float64)
    k = len(q["labels"])
    pred = p.argmax(axis=1)
    out = dict(accuracy=metrics.accuracy_score(truth, pred), macroF1=metrics.f1_score(truth, pred, average="macro"),
               logLoss=metrics.log_loss(truth, p, labels=list(range(k))),
               confusion=metrics.confusion_matrix(truth, pred, labels=list(range(k))).tolist())
    if k == 2:
        out["rocAUC"] = metrics.roc_auc_score(truth, p[:, 1])
else:
    y = np.asarray(q["predictions"], dtype=np.float32).astype(np.float64)
    out = dict(rmse=float(np.sqrt(metrics.mean_squared_error(truth, y))), mae=metrics.mean_absolute_error(truth, y),
               r2=metrics.r2_score(truth, y))
print(json.dumps(out))
